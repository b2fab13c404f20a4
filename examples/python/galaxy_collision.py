"""Two disc galaxies falling into each other, animated (galaxy_collision.gif, or .mp4 with
--mp4 and ffmpeg), on the fastest engine this machine has: CUDA, else OpenCL, else BLOCK.

    python examples/python/galaxy_collision.py [--n 20000] [--frames 120] [--out DIR] [--small]
"""
import argparse
import os

import nbodyh


def pick_engine(system):
    """The first engine that creates a simulation here."""
    for engine in ("cuda", "opencl", "block"):
        if not nbodyh.available(engine):
            continue
        try:
            nbodyh.Simulation(system, engine=engine, softening=0.05)
        except (nbodyh.UnavailableError, nbodyh.DeviceError) as e:
            print("%s: %s" % (engine, e))
            continue
        return engine
    return "block"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--frames", type=int, default=120)
    p.add_argument("--t-end", type=float, default=12.0)
    p.add_argument("--mp4", action="store_true")
    p.add_argument("--out", default=".")
    p.add_argument("--small", action="store_true", default=os.environ.get("NBODYH_EXAMPLE_SMALL") == "1")
    a = p.parse_args()
    n, frames, t_end = (400, 6, 0.6) if a.small else (a.n, a.frames, a.t_end)
    s = nbodyh.collision(n, central_fraction=0.9, separation=3.0, seed=7)
    engine = pick_engine(s)
    sim = nbodyh.Simulation(s, engine=engine, method="leapfrog", dt=2e-3, softening=0.05)
    path = os.path.join(a.out, "galaxy_collision." + ("mp4" if a.mp4 else "gif"))
    times = [t_end * (k + 1) / frames for k in range(frames)]
    nbodyh.animate(sim, times, path, fps=20, size=5.0)
    e0, e1 = nbodyh.measure(s, softening=0.05).energy, nbodyh.measure(sim.state, softening=0.05).energy
    print("N = %d on %s (%s): t = %g in %d steps, |dE/E| = %.2e; wrote %s" % (
        n, engine, sim.simd_name, sim.t, sim.stats.steps, abs((e1 - e0) / e0), path))


if __name__ == "__main__":
    main()
