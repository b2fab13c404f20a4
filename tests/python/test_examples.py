"""Every example under examples/python runs (small sizes, headless) and writes its picture."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLES = {
    "plummer_energy.py": ["plummer_energy.png", "plummer.png"],
    "figure_eight.py": ["figure_eight_order.png"],
    "outer_solar_system.py": ["outer_solar_system.png"],
    "galaxy_collision.py": ["galaxy_collision.gif"],
}


def test_every_example_is_listed():
    assert sorted(p for p in os.listdir(ROOT / "examples" / "python") if p.endswith(".py")) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(name, tmp_path):
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg", NBODYH_EXAMPLE_SMALL="1")
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / name), "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    for out in EXAMPLES[name]:
        assert (tmp_path / out).stat().st_size > 1000, out


def test_plot_and_jupyter_picture(tmp_path):
    pytest.importorskip("matplotlib")
    import nbodyh
    s = nbodyh.galaxy(500)
    png = s._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    fig = nbodyh.plot(s)
    fig.savefig(str(tmp_path / "g.png"))
    sim = nbodyh.Simulation(nbodyh.plummer(100), softening=0.05)
    path = nbodyh.animate(sim, [0.01, 0.02, 0.03], str(tmp_path / "a.gif"))
    assert os.path.getsize(path) > 1000 and sim.t == 0.03
    with pytest.raises(ValueError):
        nbodyh.animate(sim, [0.01], str(tmp_path / "a.avi"))
