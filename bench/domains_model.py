#!/usr/bin/env python3
"""domains_model.py - the model of docs/scaling.md for the domain-decomposed tree, fitted to
what bench/mpi_domains.sh measured on CPU ranks, and its predictions for GPUs.

Measured (per rank, from the "dd rank" lines): the bytes of locally essential trees sent V, and
the LET items (nodes + bodies) written L, at N bodies on P ranks. Fitted in log space:

    V(N, P) = beta (N / P)^delta (P - 1)^gamma        (likewise L with its own constants)

(delta near 2/3: a domain's surface; gamma: how the volume grows with the number of other
domains, from P = 2..4 only, the fit's weakest point). The walk of received LETs adds kappa L
body-walks to a domain's N / P (kappa from the P = 1 and P > 1 walk times).

A force evaluation on P GPUs, N bodies (float: s = 4 bytes a real):

    T_P = w (N / P + kappa L) + r N / P                 walk and build of the own domain
        + (f N / P b + V) / B                           the bodies migrating, the LETs
        + c alpha (P - 1) + 8 (P - 1) 4096 * 2 / B      c all-to-alls (P - 1 messages each) and
                                                        the splitters' second histogram

Each rank holds its own bodies' state: a fraction f of them migrate a step (measured: the
"bodies moved" of the lines that give it, over the domain), b bytes each in float (index 8,
mass 4, 6 state vectors of 6 reals: the leapfrog's buffers), in one all-to-all an array (9) and
one of counts; the LETs take two a evaluation. Lines of the earlier design (positions out and
accelerations back every evaluation, 28 bytes a body in float) are read for V and L alike.

w, r: one H200's tree walk and build per body (2^24: 182 and 11 ms, docs/scaling.md); B, alpha:
InfiniBand per GPU (50 GB/s, 5 us a message). Usage: python3 bench/domains_model.py FILE.md...
"""
import math
import re
import sys

B = 50e9            # bytes/s per GPU (one NDR 400 Gb/s adapter)
ALPHA = 5e-6        # s per message
W_GPU = 0.182 / 2 ** 24   # s per body: one H200's walk, theta 0.5 monopoles (docs/scaling.md)
R_GPU = 0.011 / 2 ** 24   # s per body: its build
COLLECTIVES = 12    # all-to-alls a leapfrog step: migration counts, indices (order), then indices,
                    # masses and 6 state vectors; LET sizes, LETs
MIGRANT_BYTES = 8 + 4 + 6 * 6 * 4   # a migrating body in float: index, mass, 6 vectors of 6 reals


def parse(path):
    """{(N, P): [[domain, LET bytes, LET items, walk ms] a rank]}, and the moved fractions (bodies
    moved over the domain) of the lines that give them"""
    runs, moved = {}, []
    for line in open(path):
        m = re.match(r"\| dd rank (\d+) of (\d+) \| N (\d+) \| domain (\d+) \| sent: (?:bodies|migrating rows) (\d+) B, "
                     r"LETs (\d+) B(?:, accelerations \d+ B|; bodies moved (\d+)) \| LET nodes (\d+), bodies (\d+) \| "
                     r"walk ([\d.]+) ms", line)
        if m:
            runs.setdefault((int(m.group(3)), int(m.group(2))), []).append(
                [int(m.group(4)), int(m.group(6)), int(m.group(8)) + int(m.group(9)), float(m.group(10))])
            if m.group(7) is not None and int(m.group(2)) > 1:
                moved.append(int(m.group(7)) / int(m.group(4)))
    return runs, moved


def fit(points):
    """least squares of log y = a + d log x1 + g log x2"""
    rows = [(1.0, math.log(x1), math.log(x2), math.log(y)) for x1, x2, y in points if y > 0]
    # normal equations 3x3
    m = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    v = [sum(r[i] * r[3] for r in rows) for i in range(3)]
    for c in range(3):            # Gauss-Jordan
        piv = max(range(c, 3), key=lambda i: abs(m[i][c]))
        m[c], m[piv] = m[piv], m[c]; v[c], v[piv] = v[piv], v[c]
        for i in range(3):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [m[i][j] - f * m[c][j] for j in range(3)]; v[i] -= f * v[c]
    return [v[i] / m[i][i] for i in range(3)]


def main():
    runs, moved = {}, []
    for path in sys.argv[1:]:     # every file's runs together
        r, m = parse(path)
        for key, rows in r.items():
            runs.setdefault(key, []).extend(rows)
        moved += m
    f = sorted(moved)[len(moved) // 2] if moved else 0.0   # the median moved fraction a step
    vpts, lpts, kap = [], [], []
    for (n, p), rows in sorted(runs.items()):
        if p < 2:
            continue
        v = sum(r[1] for r in rows) / len(rows)     # per rank, over every run of (N, P) in the file
        l = sum(r[2] for r in rows) / len(rows)
        vpts.append((n / p, p - 1, v)); lpts.append((n / p, p - 1, l))
        if (n, 1) in runs:
            w1 = runs[(n, 1)][0][3]
            wp = sum(r[3] for r in rows) * p / len(rows)
            if w1 > 0 and l > 0:
                kap.append((wp / w1 - 1) * n / (l * p))
    a, d, g = fit(vpts)
    al, dl, gl = fit(lpts)
    kappa = sorted(kap)[len(kap) // 2] if kap else 0.0
    print(f"LET bytes a rank:  V = {math.exp(a):.4g} (N/P)^{d:.3f} (P-1)^{g:.3f}")
    print(f"LET items a rank:  L = {math.exp(al):.4g} (N/P)^{dl:.3f} (P-1)^{gl:.3f}")
    print(f"walk of received LET items: kappa = {kappa:.3f} body-walks an item (median of {len(kap)})")
    print(f"bodies migrating a step: f = {f:.4f} of a domain (median of {len(moved)} rank lines)")
    print("\n| measured | N | P | LET bytes a rank | fitted |\n|---|---:|---:|---:|---:|")
    for x, q, v in vpts:
        p = q + 1
        print(f"| | {int(x * p)} | {p} | {v:.0f} | {math.exp(a) * x ** d * q ** g:.0f} |")

    def predict(n, p, s=4):
        x = n / p
        v = 0.0 if p == 1 else math.exp(a) * x ** d * (p - 1) ** g * s / 8   # the CPU runs were double
        l = 0.0 if p == 1 else math.exp(al) * x ** dl * (p - 1) ** gl
        terms = {
            "walk": W_GPU * (x + kappa * l),
            "build": R_GPU * x,
            "bodies migrating": (0 if p == 1 else f * x * MIGRANT_BYTES) / B,
            "LETs": v / B,
            "latency": COLLECTIVES * ALPHA * (p - 1),
            "splitter histogram": (p - 1) * 8 * 4096 * 2 / B,
        }
        return sum(terms.values()), terms

    print("\n| N | GPUs | predicted ms | speed-up | largest term |\n|---|---:|---:|---:|---|")
    for n, ps in [(2 ** 24, [1, 4, 64, 1024]), (2 ** 26, [1, 4, 64, 1024]), (2 ** 30, [4, 64, 1024])]:
        t1 = predict(n, 1)[0]
        for p in ps:
            t, terms = predict(n, p)
            big = max(terms, key=terms.get)
            print(f"| 2^{int(math.log2(n))} | {p} | {t * 1e3:.1f} | {t1 / t:.1f}x | {big} ({terms[big] * 1e3:.1f} ms) |")


if __name__ == "__main__":
    main()
