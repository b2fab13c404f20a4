"""nbodyh's cost, side by side: the same run from Python and from C, what a no-op Python
callback costs a call, REBOUND's Python package on the same run, install time and wheel size.

    make bench-python                       (builds build/pyenv first)
    build/pyenv/bin/python bench/python_bench.py [--n 4096] [--steps 100] [--repeats 21]
        [--threads 2] [--install] [--out bench/results/python.md]

The run: a Plummer sphere of N bodies (seed 42), leapfrog, dt 1e-3, softening 0.01, STEPS
steps on the BLOCK engine with THREADS threads, REPEATS times from each side, interleaved: the C
side (bench/python_ref.c) is one process kept open that does a run for every line it reads, and
each C run is followed by a Python run (the order swapped every other pair), so both see the
machine in the same moments. Reported: the fastest and the median run of each side and the
median of the pairs' ratios. python_ref.c is compiled with the compiler and flags setup.py
compiled the extension with (sysconfig's CC and CFLAGS, -fPIC, -ffp-contract=off, -fopenmp),
so only the wrapper differs. REBOUND (when
`import rebound` works; `pip install rebound`, for this benchmark only): the same bodies,
gravity "basic" (direct summation), integrator "leapfrog", the same dt and softening, driven
from Python. --install times `pip install .` into a fresh venv and builds the wheel (network).
"""
import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import nbodyh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_c_reference(path):
    """bench/python_ref.c with the flags the extension was compiled with (sysconfig's CC and CFLAGS,
    and what setup.py adds: -fPIC, -ffp-contract=off, -fopenmp)."""
    import shlex
    import sysconfig
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    flags = shlex.split(sysconfig.get_config_var("CFLAGS") or "-O2") + ["-fPIC", "-ffp-contract=off", "-fopenmp"]
    cmd = cc + flags + ["-std=c99", "-I", ROOT, os.path.join(ROOT, "bench", "python_ref.c"), "-o", path, "-lm"]
    subprocess.run(cmd, check=True)
    return " ".join(cc + flags)


def time_nbodyh(n, steps, engine, threads):
    s = nbodyh.plummer(n, seed=42)
    sim = nbodyh.Simulation(s, engine=engine, method="leapfrog", dt=1e-3, softening=0.01, threads=threads)
    t0 = time.perf_counter()
    sim.advance(steps * 1e-3)
    return time.perf_counter() - t0, sim


def time_interleaved(exe, n, steps, engine, threads, repeats):
    """`repeats` runs from C (one python_ref process, a run per line sent) and as many from
    Python, alternating C-Python and Python-C pairs; returns the two lists of seconds and the
    last Python simulation."""
    c_times, py_times, sim = [], [], None
    ref = subprocess.Popen([exe, str(n), str(steps), engine, str(threads)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        for k in range(repeats):
            for side in ("c", "py") if k % 2 == 0 else ("py", "c"):
                if side == "c":
                    ref.stdin.write("run\n")
                    ref.stdin.flush()
                    line = ref.stdout.readline()
                    if not line:
                        raise RuntimeError("python_ref stopped (exit %s)" % ref.poll())
                    c_times.append(float(line))
                else:
                    t, sim = time_nbodyh(n, steps, engine, threads)
                    py_times.append(t)
    finally:
        ref.stdin.close()
        ref.wait()
    return c_times, py_times, sim


def time_rebound(n, steps):
    try:
        import rebound
    except ImportError:
        return None
    s = nbodyh.plummer(n, seed=42)
    sim = rebound.Simulation()
    sim.G = 1.0
    sim.integrator = "leapfrog"
    sim.gravity = "basic"
    sim.dt = 1e-3
    sim.softening = 0.01
    for i in range(n):
        sim.add(m=s.m[i], x=s.x[i], y=s.y[i], z=s.z[i], vx=s.vx[i], vy=s.vy[i], vz=s.vz[i])
    t0 = time.perf_counter()
    sim.integrate(steps * 1e-3, exact_finish_time=0)
    elapsed = time.perf_counter() - t0
    xyz = np.zeros((n, 3))
    sim.serialize_particle_data(xyz=xyz)
    return elapsed, xyz, rebound.__version__, sim.t


def callback_cost(steps):
    """Seconds per call of a no-op after_step hook, extra_force and progress callback: runs of a
    two-body system (the step itself is tiny) with and without the callback."""
    s = nbodyh.System(x=[0, 1], y=0, z=0, vx=[0, 0], vy=[0, 1], vz=0, m=[1, 1e-3])
    base = dict(engine="simple", method="euler", dt=1e-5)

    def run(**kw):
        best = 1e300
        for _ in range(3):
            sim = nbodyh.Simulation(s, **base, **kw)
            t0 = time.perf_counter()
            sim.advance(steps * 1e-5 * 0.999999)
            best = min(best, time.perf_counter() - t0)
            assert sim.stats.steps in (steps, steps + 1)
        return best

    plain = run()
    out = {}
    out["after_step hook"] = (run(after_step=lambda sim: None) - plain) / steps
    out["extra_force"] = (run(extra_force=lambda *a: None) - plain) / steps
    out["progress (every step)"] = (run(progress=lambda p: None, progress_interval=0) - plain) / steps
    return plain / steps, out


def install_figures():
    tmp = tempfile.mkdtemp(prefix="nbodyh-install-")
    try:
        subprocess.run([sys.executable, "-m", "venv", os.path.join(tmp, "venv")], check=True)
        pip = os.path.join(tmp, "venv", "bin", "pip")
        subprocess.run([pip, "install", "-q", "numpy"], check=True)        # a runtime dependency, not timed
        env = dict(os.environ, NBODYH_WITH_CUDA="0")
        t0 = time.perf_counter()
        subprocess.run([pip, "install", "-q", ROOT], check=True, env=env, cwd=tmp)
        install = time.perf_counter() - t0
        subprocess.run([pip, "wheel", "-q", "--no-deps", "-w", os.path.join(tmp, "wheel"), ROOT], check=True, env=env,
                       cwd=tmp)
        wheel = [os.path.join(tmp, "wheel", f) for f in os.listdir(os.path.join(tmp, "wheel"))][0]
        return install, os.path.getsize(wheel), os.path.basename(wheel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--c-reference", default=None, help="a python_ref binary (default: built here with the extension's flags)")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=21, help="runs from each side (interleaved)")
    p.add_argument("--threads", type=int, default=2, help="OpenMP threads of both runs (0: OpenMP's default)")
    p.add_argument("--engine", default="block")
    p.add_argument("--callback-steps", type=int, default=200000)
    p.add_argument("--install", action="store_true", help="time pip install . in a fresh venv, build the wheel")
    p.add_argument("--out", default=None, help="append the figures (markdown) to this file")
    a = p.parse_args()
    if a.threads:
        os.environ["OMP_NUM_THREADS"] = str(a.threads)

    rows = []
    flags = "given"
    if a.c_reference is None:
        a.c_reference = os.path.join(tempfile.mkdtemp(prefix="nbodyh-bench-"), "python_ref")
        flags = build_c_reference(a.c_reference)
    time_interleaved(a.c_reference, a.n, a.steps, a.engine, a.threads, 2)     # warm both sides up
    c_times, py_times, sim = time_interleaved(a.c_reference, a.n, a.steps, a.engine, a.threads, a.repeats)
    c, py = min(c_times), min(py_times)
    c_med, py_med = statistics.median(c_times), statistics.median(py_times)
    pair = statistics.median([p / q for p, q in zip(py_times, c_times)])
    rows.append(("%s, leapfrog, N = %d, %d steps, %d runs a side, interleaved: C (nbody_advance; %s)" % (
        a.engine, a.n, a.steps, a.repeats, flags), "fastest %.4f s, median %.4f s" % (c, c_med)))
    rows.append(("the same from Python (Simulation.advance)", "fastest %.4f s (%+.1f%%), median %.4f s (%+.1f%%)" % (
        py, 100 * (py / c - 1), py_med, 100 * (py_med / c_med - 1))))
    rows.append(("  Python / C, median of the %d adjacent pairs" % a.repeats, "%+.1f%%" % (100 * (pair - 1))))
    rows.append(("  SIMD level, threads", "%s, %s" % (sim.simd_name, a.threads or "OpenMP default")))

    per_step, cost = callback_cost(a.callback_steps)
    rows.append(("a step of 2 bodies (simple, euler) without callbacks", "%.3f us" % (1e6 * per_step)))
    for name, v in cost.items():
        rows.append(("no-op %s, per call" % name, "%.3f us" % (1e6 * v)))

    reb = time_rebound(a.n, a.steps)
    if reb is None:
        rows.append(("REBOUND", "not installed (pip install rebound)"))
    else:
        t_reb, xyz, version, t_end = reb
        st = sim.state
        dx = np.max(np.abs(xyz - np.stack([st.x, st.y, st.z], axis=1)))
        rows.append(("REBOUND %s (basic gravity, leapfrog, same bodies), same run" % version,
                     "%.4f s: nbodyh %.1fx faster" % (t_reb, t_reb / py)))
        rows.append(("  largest position difference nbodyh - REBOUND at t = %g" % t_end, "%.1e" % dx))

    if a.install:
        t_inst, size, name = install_figures()
        rows.append(("pip install . in a fresh venv (numpy there; build isolation; no CUDA)", "%.1f s" % t_inst))
        rows.append(("wheel %s" % name, "%.0f KiB" % (size / 1024)))

    width = max(len(r[0]) for r in rows)
    lines = ["| %-*s | %s |" % (width, k, v) for k, v in rows]
    # a copied tree (the device machine's) may sit inside another checkout: COMMIT= names it
    commit = os.environ.get("COMMIT") or subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                                        capture_output=True, text=True).stdout.strip()
    head = ["", "## %s, %s, commit %s" % (datetime.date.today().isoformat(), platform.node() or "machine", commit), "",
            "%s, %d cores seen, Python %s, numpy %s, nbodyh features %s" % (
                platform.processor() or platform.machine(), os.cpu_count(), platform.python_version(), np.__version__,
                nbodyh.features),
            "", "`%s`" % " ".join([os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else "python"]
                                  + [os.path.relpath(x, ROOT) if os.path.exists(x) and x.startswith(ROOT) else x
                                     for x in sys.argv]),
            "", "| what | figure |", "| --- | --- |"]
    text = "\n".join(head + lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
