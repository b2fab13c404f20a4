"""ph4_plummer.py - AMUSE's ph4 (4th-order Hermite, block steps) on a Plummer sphere, the peer of
bench/bench_hermite.c. A benchmark tool only: nbody.h never depends on AMUSE.

    pip install amuse-framework amuse-ph4
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 python3 bench/ph4_plummer.py N [options]

Options:
    --ic FILE      the bodies from FILE (lines "m x y z vx vy vz", e.g. `bench_hermite ic N seed`),
                   so that both codes integrate the same sphere; default: AMUSE's
                   new_plummer_model(N) with numpy's seed --seed
    --seed S       (default 42)
    --eta E        ph4's timestep_parameter (default: ph4's own, 0.14)
    --t-end T      (default 1)
Henon units (G = M = 1), no softening, one worker over the sockets channel. Prints one
Markdown row: N, abs(dE/E), wall seconds (evolve_model only), and the step counts ph4 reports
where this AMUSE version exposes them.
"""
import argparse
import time

import numpy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--ic")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--eta", type=float)
    ap.add_argument("--t-end", type=float, default=1.0)
    a = ap.parse_args()

    from amuse.units import nbody_system
    from amuse.datamodel import Particles
    from amuse.ic.plummer import new_plummer_model
    from amuse.community.ph4.interface import ph4

    if a.ic:
        d = numpy.loadtxt(a.ic)
        bodies = Particles(len(d))
        bodies.mass = d[:, 0] | nbody_system.mass
        bodies.position = d[:, 1:4] | nbody_system.length
        bodies.velocity = d[:, 4:7] | nbody_system.speed
    else:
        numpy.random.seed(a.seed)
        bodies = new_plummer_model(a.n)
    code = ph4(channel_type="sockets")
    code.parameters.epsilon_squared = 0 | nbody_system.length ** 2
    if a.eta is not None:
        code.parameters.timestep_parameter = a.eta
    code.particles.add_particles(bodies)
    e0 = code.kinetic_energy + code.potential_energy
    t0 = time.time()
    code.evolve_model(a.t_end | nbody_system.time)
    wall = time.time() - t0
    e1 = code.kinetic_energy + code.potential_energy
    de = abs((e1 - e0) / e0)
    steps = []
    for name in ("get_total_steps", "get_number_of_steps", "get_nsteps"):
        f = getattr(code, name, None)
        if f is not None:
            try:
                steps.append("%s %s" % (name, f()))
            except Exception:  # an AMUSE without this call: leave it out
                pass
    print("| %d | %s | %.2e | %.3f | %s | %s |" % (len(bodies), "ic " + a.ic if a.ic else "new_plummer_model seed %d" % a.seed,
                                                 de, wall, code.parameters.timestep_parameter, "; ".join(steps)))
    code.stop()


if __name__ == "__main__":
    main()
