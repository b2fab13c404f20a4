"""A Plummer sphere: energy error against time for leapfrog and RK4 (plummer_energy.png).

    python examples/python/plummer_energy.py [--n 2000] [--out DIR] [--small]
"""
import argparse
import os

import matplotlib
import numpy as np

import nbodyh


def energy_history(system, t_end, samples, **desc):
    sim = nbodyh.Simulation(system, **desc)
    eps = desc.get("softening", 0.0)
    e0 = nbodyh.measure(system, softening=eps).energy
    times = np.linspace(0.0, t_end, samples + 1)
    err = [0.0]
    state = sim.state
    for t in times[1:]:
        sim.advance(t)
        sim.get_state(out=state)                  # no new arrays: the views are refreshed
        err.append(abs((nbodyh.measure(state, softening=eps).energy - e0) / e0))
    return times, np.array(err), sim


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--t-end", type=float, default=2.0)
    p.add_argument("--out", default=".")
    p.add_argument("--small", action="store_true", default=os.environ.get("NBODYH_EXAMPLE_SMALL") == "1")
    a = p.parse_args()
    n, t_end = (200, 0.2) if a.small else (a.n, a.t_end)
    s = nbodyh.plummer(n, seed=42)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for method in ("leapfrog", "rk4"):
        t, err, sim = energy_history(s, t_end, 40, method=method, dt=1e-3, softening=0.01)
        print("%-9s N = %d  t = %g  |dE/E| = %.3g  (%d steps, %s engine, %s)" % (
            method, n, sim.t, err[-1], sim.stats.steps, sim.desc["engine"], sim.simd_name))
        ax.semilogy(t[1:], err[1:], label=method)
    ax.set_xlabel("t")
    ax.set_ylabel("|dE / E|")
    ax.set_title("Plummer sphere, N = %d, dt = 1e-3, softening 0.01" % n)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(a.out, "plummer_energy.png")
    fig.savefig(path, dpi=100)
    nbodyh.plot(sim.state).savefig(os.path.join(a.out, "plummer.png"), dpi=80, facecolor="black")
    print("wrote", path)


if __name__ == "__main__":
    main()
