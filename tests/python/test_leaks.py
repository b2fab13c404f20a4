"""1000 create/destroy cycles leak nothing: the C allocator's count (through nbody_desc's
allocator hooks and the NBODY_MALLOC macros, both counted by the package) and tracemalloc."""
import gc
import tracemalloc

import nbodyh


def cycle(s, i):
    sim = nbodyh.Simulation(s, softening=0.01, method="rk4" if i % 2 else "leapfrog",
                            after_step=(lambda x: None) if i % 3 == 0 else None)
    sim.step()
    st = sim.state
    sim.set_state(st)
    x = st.x                       # a view outliving its simulation
    del sim, st
    return x.sum()


def test_thousand_create_destroy_cycles_leak_nothing():
    s = nbodyh.plummer(32, seed=1)
    for i in range(20):            # warm-up: caches, first-call allocations
        cycle(s, i)
    gc.collect()
    blocks0, bytes0, total0 = nbodyh._nbodyh._alloc_stats()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for i in range(1000):
        cycle(s, i)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    blocks1, bytes1, total1 = nbodyh._nbodyh._alloc_stats()
    assert total1 - total0 >= 1000 * 3          # the count sees the simulations' allocations
    assert (blocks1, bytes1) == (blocks0, bytes0)
    growth = sum(d.size_diff for d in snap1.compare_to(snap0, "filename"))
    assert growth < 64 * 1024, growth


def test_systems_and_generators_free_their_memory():
    gc.collect()
    blocks0 = nbodyh._nbodyh._alloc_stats()[0]
    for i in range(1000):
        s = nbodyh.plummer(16, seed=i)
        s2 = s.add_orbit(1e-3, (2.0, 0.1))
        del s, s2
    assert nbodyh._nbodyh._alloc_stats()[0] == blocks0
