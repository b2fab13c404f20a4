"""The outer solar system with WHFast: Jupiter's and Saturn's semi-major axes and
eccentricities, and the energy error, over 10^4 years (outer_solar_system.png).

    python examples/python/outer_solar_system.py [--years 10000] [--out DIR] [--small]
"""
import argparse
import math
import os

import numpy as np

import nbodyh

YEAR = 2 * math.pi / math.sqrt(1.0 + 1.0 / 1047.3486)   # time unit 1/k days: a year is about 2 pi


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--years", type=float, default=1e4)
    p.add_argument("--out", default=".")
    p.add_argument("--small", action="store_true", default=os.environ.get("NBODYH_EXAMPLE_SMALL") == "1")
    a = p.parse_args()
    years = 500.0 if a.small else a.years
    s = nbodyh.outer_solar_system()
    sim = nbodyh.Simulation(s, method="whfast", dt=0.5 * YEAR, whfast_corrector=11)
    e0 = nbodyh.measure(s).energy
    times = np.linspace(0, years * YEAR, 201)
    rows = []
    state = sim.state
    for t in times:
        sim.advance(t)
        sim.get_state(out=state)
        jup, sat = state.get_orbit(1, primary=None), state.get_orbit(2, primary=None)   # Jacobi elements
        rows.append((t / YEAR, jup.a, jup.e, sat.a, sat.e, abs((nbodyh.measure(state).energy - e0) / e0)))
    rows = np.array(rows)
    print("after %g years, %d steps: |dE/E| = %.2e, Jupiter a = %.5f e = %.5f, Saturn a = %.5f e = %.5f" % (
        years, sim.stats.steps, rows[-1, 5], rows[-1, 1], rows[-1, 2], rows[-1, 3], rows[-1, 4]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(6, 7), sharex=True)
    axes[0].plot(rows[:, 0], rows[:, 2], label="Jupiter")
    axes[0].plot(rows[:, 0], rows[:, 4], label="Saturn")
    axes[0].set_ylabel("e")
    axes[0].legend(fontsize=8)
    axes[1].plot(rows[:, 0], rows[:, 1] - rows[0, 1], label="Jupiter")
    axes[1].plot(rows[:, 0], rows[:, 3] - rows[0, 3], label="Saturn")
    axes[1].set_ylabel("a - a(0) [AU]")
    axes[2].semilogy(rows[1:, 0], rows[1:, 5])
    axes[2].set_ylabel("|dE / E|")
    axes[2].set_xlabel("years")
    axes[0].set_title("outer solar system, WHFast (Jacobi, corrector 11), dt = 0.5 yr")
    fig.tight_layout()
    path = os.path.join(a.out, "outer_solar_system.png")
    fig.savefig(path, dpi=100)
    print("wrote", path)


if __name__ == "__main__":
    main()
