#!/usr/bin/env python3
"""scaling_model.py - fit the model of docs/scaling.md to the strong-scaling table that
bench/multigpu.c prints (bench/device_multigpu.sh) and predict 8, 64 and 1024 GPUs.

    T_P(N) = C(N) / P + R(N) + c0 + alpha * (P - 1) + 3 s N (P - 1) / (P * B)

C: the work that divides (dense: a N^2; tree: the walk), R: the work every GPU repeats (the
tree build on the gathered positions; 0 for dense), c0: a step's fixed cost, the last two
terms a ring all-gather of the positions (s bytes a real) with per-hop latency alpha and
bandwidth B per GPU. Dense N = 2^18 and 2^20 on 1 and 2 GPUs give a, c0, alpha and B (NVLink);
the tree at 2^24 then splits its time into walk and build. InfiniBand: B_IB, alpha_IB below.

Usage: python3 bench/scaling_model.py multigpu-output.md [s=4]
"""
import re
import sys

B_IB = 50e9        # bytes/s per GPU: one NDR 400 Gb/s adapter per GPU
ALPHA_IB = 5e-6    # s per ring step across hosts


def table(path):
    rows = {}
    for line in open(path):
        # | engine | 2^k | GPUs | [tree walks |] ms | ...: the tree's walks balanced by time (the
        # engine's default) or with no such column; rows split by count are left out
        m = re.match(r"\|\s*(cuda(?:-tree)?)\s*\|\s*2\^(\d+)\s*\|\s*(\d+)\s*\|(?:\s*(by time|by count|by time, 1024 threads|)\s*\|)?\s*([\d.]+)\s*\|", line)
        if m and "Strong" not in line and m.group(4) in (None, "", "by time"):
            rows.setdefault((m.group(1), int(m.group(2))), {})[int(m.group(3))] = float(m.group(5)) / 1e3
    return rows


def main():
    rows = table(sys.argv[1])
    s = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    d18, d20 = rows[("cuda", 18)], rows[("cuda", 20)]
    n18, n20 = 2.0 ** 18, 2.0 ** 20
    # one GPU: T1 = a N^2 + c0
    a = (d20[1] - d18[1]) / (n20 ** 2 - n18 ** 2)
    c0 = d18[1] - a * n18 ** 2
    # two GPUs: T2 - a N^2 / 2 - c0 = alpha + 3 s N / (2 B)
    x18, x20 = d18[2] - a * n18 ** 2 / 2 - c0, d20[2] - a * n20 ** 2 / 2 - c0
    inv_b = max((x20 - x18) / (3 * s * (n20 - n18) / 2), 1e-15)
    alpha = max(x18 - 3 * s * n18 / 2 * inv_b, 0.0)
    print(f"dense: a = {a:.4g} s per interaction ({1 / a:.3g} interactions/s), c0 = {c0 * 1e3:.3f} ms, "
          f"alpha = {alpha * 1e6:.1f} us, B = {1 / inv_b / 1e9:.1f} GB/s")
    t24 = rows.get(("cuda-tree", 24))
    walk = build = None
    if t24 and 2 in t24:
        n = 2.0 ** 24
        comm = alpha + 3 * s * n / 2 * inv_b
        walk = 2 * (t24[1] - t24[2] + comm)          # T1 - T2 = walk/2 - comm
        build = t24[1] - walk - c0
        print(f"tree 2^24: walk {walk * 1e3:.2f} ms, build (repeated on every GPU) {build * 1e3:.2f} ms")

    def predict(C, R, n, P, b, al):
        return C / P + R + c0 + al * (P - 1) + 3 * s * n * (P - 1) / (P * b)

    print("\n| engine | N | GPUs | link | predicted ms / step | speed-up |\n|---|---:|---:|---|---:|---:|")
    for name, n, C, R in [("cuda", n20, a * n20 ** 2, 0.0), ("cuda", 2.0 ** 24, a * 2.0 ** 48, 0.0)] + (
            [("cuda-tree", 2.0 ** 24, walk, build)] if walk else []):
        t1 = predict(C, R, n, 1, 1 / inv_b, alpha)
        for P in (8, 64, 1024):
            link, b, al = ("NVLink", 1 / inv_b, alpha) if P <= 8 else ("InfiniBand", B_IB, ALPHA_IB)
            t = predict(C, R, n, P, b, al)
            print(f"| {name} | 2^{int(round(__import__('math').log2(n)))} | {P} | {link} | {t * 1e3:.3f} | {t1 / t:.1f}x |")


if __name__ == "__main__":
    main()
