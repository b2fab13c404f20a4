"""Shared fixtures of the nbodyh tests: headless matplotlib, the repository root, a C compiler."""
import os
import pathlib
import shutil

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# OpenMP threads that wait by sleeping: the suite often shares its cores (make -j, a CI host);
# spinning threads of a descheduled team slow a run by tens of times there. No bits change.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cc():
    """The C compiler the Makefile uses (CC, else cc), or skip."""
    c = os.environ.get("CC", "cc")
    if not shutil.which(c):
        pytest.skip("no C compiler (CC) for the C reference")
    return c


def state_array(s):
    """A System's values in the order reference.c writes them."""
    import numpy as np
    return np.concatenate([s.x, s.y, s.z, s.vx, s.vy, s.vz, s.m, [s.t]])
