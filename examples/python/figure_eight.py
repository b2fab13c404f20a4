"""The figure-eight three-body orbit over one period at several steps: the observed order of
each method from the error at the period (figure_eight_order.png).

    python examples/python/figure_eight.py [--out DIR] [--small]
"""
import argparse
import os

import numpy as np

import nbodyh

PERIOD = 6.32591398


# steps per period of the coarsest run of each method: its error stays well above round-off
COARSEST = {"euler": 2000, "leapfrog": 200, "rk4": 100, "rkdverk": 25, "rkgl": 25}


def reference_state():
    """The positions after one period from IAS15-style Gauss-Radau at machine precision."""
    sim = nbodyh.Simulation(nbodyh.figure_eight(), method="radau")
    sim.advance(PERIOD)
    return sim.state


def error_at_period(method, steps, ref):
    sim = nbodyh.Simulation(nbodyh.figure_eight(), method=method, dt=PERIOD / steps)
    sim.advance(PERIOD)
    e = sim.state
    return float(np.sqrt(np.sum((e.x - ref.x) ** 2 + (e.y - ref.y) ** 2 + (e.z - ref.z) ** 2)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    p.add_argument("--small", action="store_true", default=os.environ.get("NBODYH_EXAMPLE_SMALL") == "1")
    a = p.parse_args()
    methods = ("leapfrog", "rk4", "rkdverk") if a.small else ("euler", "leapfrog", "rk4", "rkdverk", "rkgl")
    halvings = (1, 2, 4) if a.small else (1, 2, 4, 8)
    ref = reference_state()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    print("%-9s %6s  %s" % ("method", "order", "observed order between successive halvings of dt"))
    for method in methods:
        steps = [COARSEST[method] * h for h in halvings]
        dts = [PERIOD / k for k in steps]
        err = np.array([error_at_period(method, k, ref) for k in steps])
        observed = np.log2(err[:-1] / err[1:])
        print("%-9s %6d  %s" % (method, nbodyh.method_order(method), "  ".join("%.2f" % o for o in observed)))
        ax.loglog(dts, err, "o-", label="%s (order %d)" % (method, nbodyh.method_order(method)))
    ax.set_xlabel("dt")
    ax.set_ylabel("position error after one period")
    ax.set_title("figure-eight: convergence")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(a.out, "figure_eight_order.png")
    fig.savefig(path, dpi=100)
    print("wrote", path)


if __name__ == "__main__":
    main()
