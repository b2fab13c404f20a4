"""Callbacks, the GIL, Ctrl-C, cycles: long runs behave in a notebook."""
import _thread
import gc
import signal
import threading
import time
import weakref

import numpy as np
import pytest

import nbodyh


def stepped(system, steps, **kw):
    sim = nbodyh.Simulation(system, **kw)
    for _ in range(steps):
        sim.step()
    return sim


def test_exception_in_a_hook_surfaces_with_the_state_kept():
    s = nbodyh.plummer(200, seed=1)

    def hook(sim):
        if sim.stats.steps == 5:
            raise ZeroDivisionError("from the hook")

    sim = nbodyh.Simulation(s, softening=0.01, after_step=hook)
    with pytest.raises(ZeroDivisionError, match="from the hook"):
        sim.advance(1.0)
    assert sim.stats.steps == 5                     # stopped at once, the 5th step accepted
    ref = stepped(s, 5, softening=0.01)
    assert sim.state.x.tobytes() == ref.state.x.tobytes()
    sim.advance(0.01)                                # the simulation goes on; the hook is past step 5
    assert sim.t == 0.01


def test_exception_in_extra_force_keeps_the_last_good_state():
    s = nbodyh.plummer(100, seed=2)
    calls = [0]

    def drag(t, x, y, z, vx, vy, vz, m, ax, ay, az):
        calls[0] += 1
        if calls[0] == 4 * 3 + 2:                    # inside the 4th RK4 step
            raise KeyError("from the force")
        ax -= 0.1 * vx
        ay -= 0.1 * vy
        az -= 0.1 * vz

    sim = nbodyh.Simulation(s, method="rk4", softening=0.01, extra_force=drag)
    with pytest.raises(KeyError):
        sim.advance(1.0)
    assert sim.stats.steps == 3
    calls[0] = -10 ** 9
    ref = stepped(s, 3, method="rk4", softening=0.01, extra_force=drag)
    assert sim.state.vx.tobytes() == ref.state.vx.tobytes()


def test_exception_in_extra_force_stops_an_adaptive_run_quickly():
    def bad(t, *arrays):
        raise RuntimeError("no")

    sim = nbodyh.Simulation(nbodyh.plummer(2000), method="rkdp", tolerance=1e-6, softening=0.01, extra_force=bad)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="no"):
        sim.advance(1.0)
    assert time.perf_counter() - t0 < 2.0 and sim.t == 0.0


def test_extra_force_arrays_in_and_out():
    seen = {}

    def force(t, x, y, z, vx, vy, vz, m, ax, ay, az):
        seen["readonly"] = not x.flags.writeable
        seen["n"] = len(ax)
        ax += 1.0                                    # a uniform field along x

    s = nbodyh.plummer(50, seed=3)
    plain = stepped(s, 1, method="euler", dt=1e-3, softening=0.01).state
    pushed = stepped(s, 1, method="euler", dt=1e-3, softening=0.01, extra_force=force).state
    assert seen == {"readonly": True, "n": 50}
    assert np.allclose(pushed.vx - plain.vx, 1e-3, rtol=1e-9) and np.array_equal(pushed.vy, plain.vy)


def test_hook_returning_true_stops_with_a_hook_event():
    sim = nbodyh.Simulation(nbodyh.plummer(20), softening=0.01, before_step=lambda sim: sim.stats.steps >= 3)
    ev = sim.advance(1.0)
    assert ev.kind == "hook" and sim.stats.steps == 3


def test_hooks_may_read_and_set_the_state_but_not_step():
    errors = []

    def hook(sim):
        st = sim.state
        st.vx[:] = 0
        sim.set_state(st)
        try:
            sim.step()
        except nbodyh.BusyError as e:
            errors.append(e)

    sim = nbodyh.Simulation(nbodyh.plummer(20), softening=0.01, after_step=hook)
    sim.advance(0.003)
    assert len(errors) == 3 and np.all(sim.state.vx == 0)


def test_progress_callback_and_cancel():
    infos = []
    sim = nbodyh.Simulation(nbodyh.plummer(64), softening=0.01, progress=infos.append, progress_interval=0)
    sim.advance(0.01)
    assert len(infos) == 10 and infos[-1].t == pytest.approx(0.01) and infos[-1].t_end == 0.01
    sim = nbodyh.Simulation(nbodyh.plummer(64), softening=0.01, progress=lambda p: p.steps >= 4)
    with pytest.raises(nbodyh.CancelledError):
        sim.advance(1.0)
    assert sim.stats.steps == 4


def test_progress_true_draws_a_bar(capsys):
    sim = nbodyh.Simulation(nbodyh.plummer(64), softening=0.01)
    sim.advance(0.01, progress=True)
    assert sim.t == 0.01
    shown = []
    sim.advance(0.02, progress=shown.append)
    assert sim.t == 0.02


def test_the_gil_is_released_during_advance():
    sim = nbodyh.Simulation(nbodyh.plummer(3000), softening=0.01, threads=1)   # long enough anywhere
    counter, running = [0], [True]

    def spin():
        while running[0]:
            counter[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.05)
    before = counter[0]
    t0 = time.perf_counter()
    sim.advance(0.02)
    elapsed = time.perf_counter() - t0
    during = counter[0] - before
    running[0] = False
    th.join()
    assert elapsed > 0.05
    # the other thread counts on through the whole advance (with the GIL held it would stall
    # for the switch interval at most once: a few thousand counts)
    assert during > 20000


def test_another_thread_gets_busy_error():
    started, tried, got = threading.Event(), threading.Event(), []

    def hook(sim):                                   # inside advance: let the other thread try
        started.set()
        tried.wait(5.0)                              # waits with the GIL released

    sim = nbodyh.Simulation(nbodyh.plummer(100), softening=0.01, after_step=hook)

    def other():
        started.wait(5.0)
        try:
            sim.step()
        except nbodyh.BusyError as e:
            got.append(e)
        tried.set()

    th = threading.Thread(target=other)
    th.start()
    sim.advance(0.002)
    th.join()
    assert got and "another thread" in str(got[0])


@pytest.fixture
def sigint_handled():
    """Python's own Ctrl-C handler for the test: a job a POSIX shell starts in the background
    (`make test &`, nohup) inherits SIGINT ignored, Python then keeps it ignored, and
    interrupt_main does nothing, as a real Ctrl-C would do nothing to such a process."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_raises_keyboard_interrupt_with_the_state_kept(sigint_handled):
    sim = nbodyh.Simulation(nbodyh.plummer(3000), softening=0.01)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sim.advance(100.0)
    timer.join()
    assert time.perf_counter() - t0 < 5.0
    steps = sim.stats.steps
    assert 0 < steps and 0 < sim.t < 100.0 and sim.t == pytest.approx(steps * 1e-3)
    ref = stepped(nbodyh.plummer(3000), steps, softening=0.01)
    assert sim.state.x.tobytes() == ref.state.x.tobytes()


def test_a_callback_closing_over_its_simulation_is_collected():
    gc.collect()
    live0 = nbodyh._nbodyh._alloc_stats()[0]
    sim = nbodyh.Simulation(nbodyh.plummer(100), softening=0.01)
    sim2 = nbodyh.Simulation(nbodyh.plummer(100), softening=0.01, after_step=lambda s: sim2.t > 1.0,
                             extra_force_velocity_free=1, extra_force=lambda *a: sim2)
    sim2.advance(0.002)
    ref = weakref.ref(sim2)
    del sim2
    gc.collect()
    assert ref() is None
    del sim
    gc.collect()
    assert nbodyh._nbodyh._alloc_stats()[0] == live0


def test_a_failing_callback_leaves_no_cycle_behind():
    gc.collect()
    live0 = nbodyh._nbodyh._alloc_stats()[0]

    def make():
        sim = nbodyh.Simulation(nbodyh.plummer(50), softening=0.01, after_step=lambda s: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            sim.advance(1.0)
        return weakref.ref(sim)

    ref = make()
    gc.collect()
    assert ref() is None and nbodyh._nbodyh._alloc_stats()[0] == live0


def test_extra_force_views_are_reused_and_kept_ones_stay_valid():
    seen, reused, kept = [], [0], []

    def force(t, x, y, z, vx, vy, vz, m, ax, ay, az):
        if any(r() is ax for r in seen):             # the same array object as an earlier call
            reused[0] += 1
        else:
            seen.append(weakref.ref(ax))
        if len(kept) < 1:
            kept.append(x)                           # the callback keeps one view

    sim = nbodyh.Simulation(nbodyh.plummer(40), method="rk4", softening=0.01, extra_force=force)
    sim.advance(0.02)
    assert sim.stats.force_evals >= 80 and reused[0] >= sim.stats.force_evals - 8   # not 80 new arrays
    assert kept[0].base is sim and np.all(np.isfinite(kept[0]))


def test_progress_without_tqdm_is_a_plain_line(monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm", None)          # import tqdm fails
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    sim = nbodyh.Simulation(nbodyh.plummer(64), softening=0.01)
    sim.advance(0.01, progress=True)
    err = capsys.readouterr().err
    assert "advance:" in err and "100.0%" in err
