"""A run from Python equals the same run from C bit for bit (same engine, same method)."""
import subprocess
import warnings

import numpy as np
import pytest

import nbodyh
from conftest import state_array

RUNS = [  # ic, n, engine, method, dt, tolerance, softening, t_end
    ("plummer", 512, "block", "leapfrog", 1e-3, 0.0, 0.01, 0.05),
    ("plummer", 512, "openmp", "leapfrog", 1e-3, 0.0, 0.01, 0.05),
    ("plummer", 256, "simple", "rk4", 1e-3, 0.0, 0.01, 0.03),
    ("plummer", 256, "tree", "rkdp", 1e-3, 1e-5, 0.01, 0.03),
    ("plummer", 128, "block", "bs", 1e-3, 1e-10, 0.01, 0.02),
    ("oss", 0, "simple", "whfast", 0.5, 0.0, 0.0, 200.0),
    ("oss", 0, "block", "radau", 1.0, 0.0, 0.0, 200.0),
]


@pytest.fixture(scope="module")
def reference(cc, root, tmp_path_factory):
    exe = tmp_path_factory.mktemp("ref") / "reference"
    cmd = [cc, "-O2", "-ffp-contract=off", "-fopenmp", "-I", str(root), "-o", str(exe),
           str(root / "tests" / "python" / "reference.c"), "-lm"]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        cmd.remove("-fopenmp")          # a compiler without OpenMP: one thread, the same bits
        subprocess.run(cmd, check=True)
    return exe


def c_run(reference, run, heartbeat):
    ic, n, engine, method, dt, tol, eps, t_end = run
    out = subprocess.run([str(reference), ic, str(n), engine, method, repr(dt), repr(tol), repr(eps), repr(t_end),
                          str(int(heartbeat))], capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype=np.float64)


@pytest.mark.parametrize("run", RUNS, ids=["-".join(map(str, r[:4])) for r in RUNS])
def test_python_equals_c(reference, run):
    """Python installs a heartbeat (desc.progress) for Ctrl-C; only WHFast's bits depend on it
    (it synchronises every step then), and they equal a C run with a heartbeat."""
    ic, n, engine, method, dt, tol, eps, t_end = run
    c_state = c_run(reference, run, heartbeat=method == "whfast")
    s = nbodyh.outer_solar_system() if ic == "oss" else nbodyh.plummer(n, seed=42)
    with warnings.catch_warnings():                 # the tree's warning about adaptive steps
        warnings.simplefilter("ignore", nbodyh.NbodyWarning)
        sim = nbodyh.Simulation(s, engine=engine, method=method, dt=dt, tolerance=tol, softening=eps)
    assert sim.advance(t_end) is None
    py_state = state_array(sim.state)
    assert py_state.shape == c_state.shape
    assert py_state.tobytes() == c_state.tobytes(), "max difference %g" % np.max(np.abs(py_state - c_state))


def test_whfast_heartbeat_changes_only_round_off(reference):
    run = [r for r in RUNS if r[3] == "whfast"][0]
    plain, beat = c_run(reference, run, False), c_run(reference, run, True)
    assert np.max(np.abs(plain - beat) / (np.abs(plain) + 1.0)) < 1e-12
