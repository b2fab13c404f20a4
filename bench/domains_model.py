#!/usr/bin/env python3
"""domains_model.py - the model of docs/scaling.md for the domain-decomposed tree, fitted to
what bench/mpi_scaling.c prints on CPU ranks (BENCH_DECOMPOSE=1: a "| dd rank" line a rank,
the domains cut by planes), and its predictions for GPUs.

Read from every FILE given (lines as bench/mpi_scaling.c prints them; a line "== NAME N n P p
..." before a run names the binary it came from, so that two builds can be compared):

  - the volumes, per rank and evaluation: the LET bytes sent V and LET items (nodes + bodies)
    written L, fitted in log space as  V(N, P) = beta (N / P)^delta (P - 1)^gamma  (L likewise);
  - the walk's excess work: the ranks' counted walk work (lane interactions, which do not
    depend on the machine's load) summed, over one rank's at the same N, minus one: e(N, P), the
    received LETs' walk less the own tree's walk it replaces; fitted as e = eps (N / P)^d (P - 1)^g;
  - the bodies that change domain a step: f, the median over ranks of moved / domain;
  - the times (wall, the machine's load in them): per (binary, N, P) the medians over runs of
    the evaluation, of the slowest rank's cuts + migration, LETs and walk (processor time).

A force evaluation on P GPUs, N bodies (float), each GPU one domain:

    T_P = w(N) (1 + e) N / P + r N / P               walk (own tree and received LETs), build
        + lam w(N) L                                  writing the LETs (lam: an item against a body's walk)
        + (f b N / P + V / 2 + G) / B                 migrating bodies, LETs (float: half the
                                                      CPU's double), the domains' boxes G
        + c alpha (P - 1)                             c MPI_Alltoallv of P - 1 messages each
        + (14 + 3 l) alpha l + 32768 (P - 1) / B      9 + 3 l all-reduces (3 a level of cuts),
                                                      3 all-gathers and the 2 MPI_Alltoall of
                                                      counts, l = log2 P rounds each (recursive
                                                      doubling; Bruck's all-to-all for small
                                                      blocks); the cuts' histograms

w(N), r: one H200's walk and build per body (bench/results/tree-4gpu-2026-11-27.md: a GPU's walk
of N / 4 bodies on four, the build with packed leaves), w growing with log2 N between 2^24 and
2^26 as measured. B, alpha: NVLink on 4 GPUs (from the same page's all-gather of positions),
InfiniBand beyond (50 GB/s, 5 us a message). c = 2 (the migration's records, the LETs; 10
before the migration was packed: one an array and one for the order, and 8 more all-reduces).
The counts a step, by bench/mpi_calls.c: MPI_Alltoall 2, MPI_Alltoallv 2, MPI_Allreduce
12 on 2 ranks and 15 on 4, MPI_Allgather 3 (before: 2, 10, 20 and 23, 3).

Usage: python3 bench/domains_model.py FILE.md...
"""
import math
import re
import statistics
import sys

B_IB, ALPHA_IB = 50e9, 5e-6         # InfiniBand per GPU: one NDR 400 Gb/s adapter, latency a message
LOW_LOAD = 6.0                      # runs whose times fit the LETs' cost: the machine (2 cores) nearly idle
MIGRANT_BYTES = 8 + 4 + 6 * 6 * 4   # a migrating body in float: index, mass, 6 vectors of 6 reals
GATHER_REALS = 6 * 17 + 2           # NBODY__DD_GATHER: a rank's boxes
# One H200, float, Plummer (bench/results/tree-4gpu-2026-11-27.md): a GPU's walk of N / 4 bodies
# on four GPUs (run 1) and the build with packed leaves (run 2), ms
GPU = {
    "monopole, theta 0.5": {"walk4": {24: 47.6, 26: 199.6}, "build": {24: 3.6, 26: 13.7}},
    "quadrupole, theta 1.0": {"walk4": {24: 13.4, 26: 55.5}, "build": {24: 4.3, 26: 16.3}},
}
# NVLink, from the positions' all-gather on four H200s: 3 (P - 1) N / P floats in 0.55 ms at
# 2^24 and 1.8 ms at 2^26: t = a + bytes / B
_b24, _b26 = 3 * 3 / 4 * 2 ** 24 * 4, 3 * 3 / 4 * 2 ** 26 * 4
B_NV = (_b26 - _b24) / (1.8e-3 - 0.55e-3)
ALPHA_NV = (0.55e-3 - _b24 / B_NV) / 3      # an all-gather is about log2(4) + 1 message latencies

LINE = re.compile(r"\| dd rank (\d+) of (\d+) \| N (\d+) \| domain (\d+) \| sent: migrating rows (\d+) B, LETs (\d+) B; "
                  r"bodies moved (\d+) \| LET nodes (\d+), bodies (\d+) \| walk ([\d.]+) ms \(processor\), work ([\d.e+]+), "
                  r"build ([\d.]+) ms, other ([\d.]+) ms \(splitters \+ migration ([\d.]+), LETs ([\d.]+), waiting for the walks ([\d.]+)\)")
HEAD = re.compile(r"== (\S+) N (\d+) P (\d+) \S+ load ([\d.]+)")
EVAL = re.compile(r"\| mpi-dd \| (\d+) \| 1 \| tree \| (\d+) \| ([\d.]+) \|")


def parse(paths):
    """runs: a list of {name, N, P, ms, ranks: [dict a rank]}"""
    runs, name, load, cur = [], "?", float("nan"), None
    for path in paths:
        for line in open(path):
            m = HEAD.search(line)
            if m:
                name, load = m.group(1), float(m.group(4))
                continue
            m = EVAL.search(line)
            if m:
                cur = {"name": name, "load": load, "P": int(m.group(1)), "N": int(m.group(2)), "ms": float(m.group(3)), "ranks": []}
                runs.append(cur)
                continue
            m = LINE.search(line)
            if m and cur is not None and int(m.group(3)) == cur["N"] and int(m.group(2)) == cur["P"]:
                g = m.groups()
                cur["ranks"].append({"domain": int(g[3]), "rows": int(g[4]), "let": int(g[5]), "moved": int(g[6]),
                                     "items": int(g[7]) + int(g[8]), "walk": float(g[9]), "work": float(g[10]),
                                     "build": float(g[11]), "place": float(g[13]), "lets": float(g[14]), "wait": float(g[15])})
    return [r for r in runs if len(r["ranks"]) == r["P"]]


def fit(points):
    """least squares of log y = a + d log x1 + g log x2 (g = 0 when every x2 is 1)"""
    rows = [(1.0, math.log(x1), math.log(x2), math.log(y)) for x1, x2, y in points if y > 0]
    k = 3 if any(r[2] != 0 for r in rows) else 2
    m = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    v = [sum(r[i] * r[3] for r in rows) for i in range(k)]
    for c in range(k):            # Gauss-Jordan
        piv = max(range(c, k), key=lambda i: abs(m[i][c]))
        m[c], m[piv] = m[piv], m[c]
        v[c], v[piv] = v[piv], v[c]
        for i in range(k):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [m[i][j] - f * m[c][j] for j in range(k)]
                v[i] -= f * v[c]
    sol = [v[i] / m[i][i] for i in range(k)]
    return sol + [0.0] * (3 - k)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def volumes(runs):
    """per (N, P), P > 1: V and L a rank (means over ranks, medians over runs), the excess
    work e (median over runs, against the median one-rank work at N), moved fractions"""
    one = {}
    for r in runs:
        if r["P"] == 1:
            one.setdefault(r["N"], []).append(r["ranks"][0]["work"])
    out, moved = {}, []
    for r in runs:
        if r["P"] < 2:
            continue
        q = out.setdefault((r["N"], r["P"]), {"V": [], "L": [], "e": []})
        q["V"].append(sum(k["let"] for k in r["ranks"]) / r["P"])
        q["L"].append(sum(k["items"] for k in r["ranks"]) / r["P"])
        if r["N"] in one:
            q["e"].append(sum(k["work"] for k in r["ranks"]) / med(one[r["N"]]) - 1)
        moved += [k["moved"] / k["domain"] for k in r["ranks"] if k["domain"] > 0]
    return {key: {c: med(v) for c, v in q.items()} for key, q in out.items()}, med(moved)


def times(runs):
    """per (name, N, P): medians over runs of the evaluation and of the slowest rank's parts, ms"""
    out = {}
    for r in runs:
        q = out.setdefault((r["name"], r["N"], r["P"]), {"ms": [], "place": [], "lets": [], "walk": [], "rate": [], "n": 0})
        q["ms"].append(r["ms"])
        q["place"].append(max(k["place"] for k in r["ranks"]))
        q["lets"].append(max(k["lets"] for k in r["ranks"]))
        q["walk"].append(max(k["walk"] for k in r["ranks"]))
        q["rate"].append(sum(k["walk"] for k in r["ranks"]) / sum(k["work"] for k in r["ranks"]) * 1e6)  # ns a unit
        q["n"] += 1
    return out


def gpu_walk(case, n):
    """one H200's walk per body at N = n bodies, s (linear in log2 N through 2^24 and 2^26)"""
    w = {k: 4 * v * 1e-3 / 2 ** k for k, v in GPU[case]["walk4"].items()}
    return w[24] + (w[26] - w[24]) * (math.log2(n) - 24) / 2


def gpu_build(case):
    return GPU[case]["build"][26] * 1e-3 / 2 ** 26


def main():
    runs = parse(sys.argv[1:])
    vol, f = volumes(runs)
    keys = sorted(vol)
    # two forms of the growth with P: a power of P - 1 (every other domain adds to the LET) and a
    # power of log2 P (the far field: a shell of domains at each doubling of the distance sends a
    # like number of coarse nodes, so the LET grows as the logarithm of the number of domains)
    forms = {"P - 1": lambda p: p - 1, "log2 P": lambda p: math.log2(p)}
    fits = {}
    for q in ("V", "L", "e"):
        pts = [(n, p, vol[(n, p)][q]) for n, p in keys if vol[(n, p)][q] > 0]
        for fn, x2 in forms.items():
            b, dd, gg = fit([(n / p, x2(p), y) for n, p, y in pts])
            rms = math.sqrt(sum((b + dd * math.log(n / p) + gg * math.log(x2(p)) - math.log(y)) ** 2 for n, p, y in pts) / len(pts))
            fits[(q, fn)] = (b, dd, gg, rms, len(pts))
    best = {q: min(forms, key=lambda fn: fits[(q, fn)][3]) for q in ("V", "L", "e")}

    def model(q, fn=None):
        b, dd, gg = fits[(q, fn or best[q])][:3]
        x2 = forms[fn or best[q]]
        return lambda n, p: 0.0 if p < 2 else math.exp(b) * (n / p) ** dd * x2(p) ** gg
    V, L, E = model("V"), model("L"), model("e")
    print(f"runs read: {len(runs)}")
    for q, what in (("V", "LET bytes a rank (double)"), ("L", "LET items a rank"), ("e", "walk's excess work")):
        for fn in forms:
            b, dd, gg, rms, npts = fits[(q, fn)]
            mark = " (used)" if fn == best[q] else ""
            print(f"{what}: {q} = {math.exp(b):.4g} (N/P)^{dd:.3f} ({fn})^{gg:.3f}, rms of log residuals {rms:.3f} over {npts} points{mark}")
    print(f"bodies migrating a step:    f = {f:.4f} of a domain (median over ranks and runs)")
    print("\n| N | P | LET bytes a rank | fitted | LET items a rank | fitted | excess walk work e | fitted |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, p in keys:
        q = vol[(n, p)]
        print(f"| {n} | {p} | {q['V']:.0f} | {V(n, p):.0f} | {q['L']:.0f} | {L(n, p):.0f} | {q['e'] * 100:.2f} % | {E(n, p) * 100:.2f} % |")

    tm = times(runs)
    # the LETs written and exchanged, 2 ranks (one a core): the slowest rank's wall ms against the
    # items it wrote, a straight line: the intercept is the exchange's fixed cost on this machine,
    # the slope an item's cost, over a body's walk (one rank's processor time over N, median over N)
    pts = [(max(k["items"] for k in r["ranks"]), max(k["lets"] for k in r["ranks"])) for r in runs if r["P"] == 2 and r["load"] < LOW_LOAD]
    if len(pts) < 2:
        pts = [(0.0, 0.0), (1.0, 0.0)]    # no such runs: the LETs' writing left out (lam = 0)
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    body = med([r["ranks"][0]["walk"] / r["N"] for r in runs if r["P"] == 1])
    lam = slope / body
    print(f"LETs written and exchanged (2 ranks, {len(pts)} runs at load < {LOW_LOAD}): {my - slope * mx:.2f} ms + {slope * 1e3:.3f} us an item; "
          f"a body's walk {body * 1e3:.2f} us: lam = {lam:.3f}")
    print("\n| binary | N | P | runs | ms / evaluation | cuts + migration, slowest rank | LETs | walk (processor) | ns a unit of work |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(tm, key=lambda k: (k[1], k[2], k[0])):
        q = tm[key]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {q['n']} | {med(q['ms']):.1f} | {med(q['place']):.1f} | {med(q['lets']):.1f} | "
              f"{med(q['walk']):.1f} | {med(q['rate']):.2f} |")

    def predict(case, n, p, c=2, lg=14, alt=False):
        nv = p <= 4
        bw, al = (B_NV, ALPHA_NV) if nv else (B_IB, ALPHA_IB)
        Vm, Lm, Em = (model("V", other["V"]), model("L", other["L"]), model("e", other["e"])) if alt else (V, L, E)
        w, x, lv = gpu_walk(case, n), n / p, max(1, math.ceil(math.log2(p))) if p > 1 else 0
        terms = {
            "walk": w * x * (1 + Em(n, p)),
            "build": gpu_build(case) * x,
            "LETs written": lam * w * Lm(n, p),
            "bytes (LETs, migration)": (0 if p < 2 else f * x * MIGRANT_BYTES + Vm(n, p) / 2 + (p - 1) * GATHER_REALS * 4) / bw,
            "Alltoallv latency": c * al * (p - 1),
            "log2 P collectives' latency": (0 if p < 2 else (lg + 3 * lv) * al * lv),
            "histograms": 0 if p < 2 else 32768 * (p - 1) / bw,
        }
        return sum(terms.values()), terms

    other = {q: [fn for fn in forms if fn != best[q]][0] for q in best}
    for case in GPU:
        print(f"\nGPUs, float, {case} (NVLink to 4 GPUs: B = {B_NV / 1e9:.0f} GB/s, alpha = {ALPHA_NV * 1e6:.0f} us; "
              f"InfiniBand beyond: {B_IB / 1e9:.0f} GB/s, {ALPHA_IB * 1e6:.0f} us)")
        print("\n| N | GPUs | predicted ms | speed-up | 10 Alltoallv (before) | the other growth with P | the largest term | the terms, ms |")
        print("|---|---:|---:|---:|---:|---:|---|---|")
        for n, ps in [(2 ** 24, [1, 4, 64, 1024]), (2 ** 26, [1, 4, 64, 1024]), (2 ** 30, [4, 64, 1024])]:
            t1 = predict(case, n, 1)[0]
            for p in ps:
                t, terms = predict(case, n, p)
                t12, talt = predict(case, n, p, 10, 22)[0], predict(case, n, p, alt=True)[0]
                big = max(terms, key=terms.get)
                parts = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in terms.items() if v > 0)
                print(f"| 2^{int(math.log2(n))} | {p} | {t * 1e3:.1f} | {t1 / t:.1f}x | {t12 * 1e3:.1f} | {talt * 1e3:.1f} | {big} ({terms[big] * 1e3:.1f} ms) | {parts} |")


if __name__ == "__main__":
    main()
