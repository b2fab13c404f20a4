"""The API: systems as numpy views, generators, every method and CPU engine, errors as exceptions."""
import gc
import inspect
import sys
import warnings

import numpy as np
import pytest

import nbodyh


# ---- systems: views, not copies -------------------------------------------------------------
def test_arrays_are_views_of_the_system():
    s = nbodyh.plummer(100, seed=1)
    x = s.x
    assert isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (100,)
    assert not x.flags.owndata                     # no copy: memory the System owns
    assert np.shares_memory(s.x, s.x)              # two reads, one buffer
    assert s.x.__array_interface__["data"][0] == x.__array_interface__["data"][0]
    x[0] = 123.0                                   # writing through the view changes the System
    assert s.x[0] == 123.0
    s.vx = 0.5                                     # assigning copies into the System
    assert np.all(s.vx == 0.5)
    assert sys.getrefcount(s) >= 3                 # the view holds the System


def test_view_keeps_its_system_alive():
    x = nbodyh.plummer(50, seed=2).x
    gc.collect()
    assert np.all(np.isfinite(x)) and x.shape == (50,)
    x[:] = 1.0


def test_writing_through_the_documented_path_changes_the_simulation():
    sim = nbodyh.Simulation(nbodyh.plummer(64, seed=3), softening=0.05)
    with sim.edit() as s:
        s.vx *= -1
        vx = s.vx.copy()
    assert np.array_equal(sim.state.vx, vx)
    st = sim.state
    st.m[:] = 2.0 / st.n
    sim.set_state(st)
    assert np.allclose(nbodyh.measure(sim.state).mass, 2.0)


def test_get_state_into_an_existing_system_keeps_views_valid():
    sim = nbodyh.Simulation(nbodyh.plummer(64, seed=3), softening=0.05)
    s = sim.state
    x = s.x
    sim.advance(0.01)
    assert sim.get_state(out=s) is s
    assert np.array_equal(x, sim.state.x)


def test_system_from_arrays_and_scalars():
    s = nbodyh.System(x=[0, 1, 2], y=0, z=0, vx=0, vy=[0, 1, 0.5], vz=0, m=1.0 / 3, t=2.5)
    assert s.n == 3 and len(s) == 3 and s.t == 2.5
    assert np.allclose(s.m, 1.0 / 3) and s.vy[1] == 1
    with pytest.raises(ValueError):
        nbodyh.System(x=[0, 1], y=[0, 1, 2])
    with pytest.raises(ValueError):
        nbodyh.System()
    assert nbodyh.System(5).n == 5


def test_generators_are_deterministic_and_take_the_c_parameters():
    a, b = nbodyh.plummer(200, seed=7), nbodyh.plummer(200, seed=7)
    assert a.x.tobytes() == b.x.tobytes()
    assert a.x.tobytes() != nbodyh.plummer(200, seed=8).x.tobytes()
    assert nbodyh.uniform_cube(10).n == 10
    g = nbodyh.galaxy(101, central_fraction=0.5, seed=1)
    assert g.m[0] == pytest.approx(0.5)
    assert nbodyh.collision(200, central_fraction=0.9, separation=4.0).n == 200
    assert nbodyh.figure_eight().n == 3 and nbodyh.pythagorean().n == 3
    assert nbodyh.outer_solar_system().n == 5
    with pytest.raises(ValueError):
        nbodyh.galaxy(10, central_fraction=1.5)


def test_copy_save_load_csv(tmp_path):
    s = nbodyh.plummer(30, seed=4)
    c = s.copy()
    c.x[0] = 99
    assert s.x[0] != 99
    s.save(tmp_path / "s.nbody")
    t = nbodyh.load(str(tmp_path / "s.nbody"))
    assert t.x.tobytes() == s.x.tobytes() and t.m.tobytes() == s.m.tobytes()
    s.write_csv(str(tmp_path / "s.csv"))
    assert (tmp_path / "s.csv").read_text().count("\n") >= 30


# ---- every method and every CPU engine --------------------------------------------------------
@pytest.mark.parametrize("method", [m for m in nbodyh.METHODS if m != "default"])
def test_every_method_runs_and_conserves(method):
    # WHFast needs a central body: the outer solar system; Hermite's start step a/jerk (a body at
    # rest in the centre of the figure-eight has none): a softened Plummer sphere; the rest the
    # figure-eight
    s, dt, t_end = {"whfast": (nbodyh.outer_solar_system(), 0.5, 50.0),
                    "hermite": (nbodyh.plummer(64, seed=1), 1e-3, 0.1)}.get(method, (nbodyh.figure_eight(), 1e-3, 0.2))
    kw = dict(method=method, dt=dt, softening=0.05 if method == "hermite" else 0.0)
    if nbodyh.method_adaptive(method):
        kw["tolerance"] = 1e-8
    sim = nbodyh.Simulation(s, **kw)
    e0 = nbodyh.measure(s, softening=kw["softening"]).energy
    assert sim.advance(t_end) is None
    assert sim.t == t_end and sim.stats.steps > 0
    e1 = nbodyh.measure(sim.state, softening=kw["softening"]).energy
    assert abs((e1 - e0) / e0) < (1e-2 if nbodyh.method_order(method) < 2 else 1e-5)


@pytest.mark.parametrize("engine", nbodyh.CPU_ENGINES)
def test_every_cpu_engine_agrees_with_simple(engine):
    s = nbodyh.plummer(300, seed=5)
    ref = nbodyh.accelerations(s, engine="simple", softening=0.01)
    acc = nbodyh.accelerations(s, engine=engine, softening=0.01, theta=0.2)
    tol = 2e-2 if engine == "tree" else 1e-12
    for a, b in zip(acc, ref):
        assert np.median(np.abs(a - b) / (np.abs(b) + 1e-3)) < tol
    sim = nbodyh.Simulation(s, engine=engine, softening=0.01)
    sim.advance(0.01)
    assert np.all(np.isfinite(sim.state.x))


def test_gpu_engines_exist_and_say_why_when_missing():
    s = nbodyh.plummer(64)
    for engine in ("cuda", "cuda_tree", "opencl", "opencl_tree"):
        try:
            sim = nbodyh.Simulation(s, engine=engine, softening=0.01)
        except nbodyh.UnavailableError as e:
            assert str(e)                           # the library's reason
        except nbodyh.DeviceError:
            pass
        else:
            sim.advance(0.01)
            assert np.all(np.isfinite(sim.state.x))


def test_enum_names_and_ints_are_accepted():
    s = nbodyh.plummer(20)
    sim = nbodyh.Simulation(s, engine="BLOCK", method="rk4", traversal="stack", visit_order="body",
                            simd="portable", collision="none", radau_control="global")
    assert sim.desc["engine"] == "block" and sim.desc["method"] == "rk4"
    assert nbodyh.Simulation(s, engine=1).desc["engine"] == "simple"
    assert sim.simd_name == "portable"


def test_stats_state_and_repr():
    sim = nbodyh.Simulation(nbodyh.plummer(50), softening=0.01, dt=1e-3)
    sim.step()
    assert sim.stats.steps == 1 and sim.t == pytest.approx(1e-3) and sim.n == 50
    assert "Simulation" in repr(sim) and "50 bodies" in repr(sim)
    assert "System" in repr(sim.state)
    assert sim.state.t == sim.t


# ---- errors map to exceptions -----------------------------------------------------------------
def test_invalid_argument_is_value_error_with_the_library_reason():
    s = nbodyh.plummer(20)
    with pytest.raises(ValueError) as e:
        nbodyh.Simulation(s, method="leapfrog", extra_force=lambda *a: None)
    assert "velocity" in str(e.value)             # the line the library logged
    with pytest.raises(ValueError, match="dt"):            # the library names the field
        nbodyh.Simulation(s, dt=-1.0)
    with pytest.raises(ValueError, match="theta"):
        nbodyh.desc_check(s, theta=-0.5)
    assert nbodyh.desc_check(s, engine="tree", theta=0.3) is None
    with pytest.raises(ValueError):
        nbodyh.Simulation(s, engine="warp")
    with pytest.raises(TypeError):
        nbodyh.Simulation(s, no_such_field=1)
    with pytest.raises(TypeError):
        nbodyh.Simulation(s, hook_user_data=object())
    sim = nbodyh.Simulation(s)
    with pytest.raises(ValueError):
        sim.advance(-1.0)                          # before t
    bad = s.copy()
    bad.x[0] = np.nan
    with pytest.raises(ValueError):
        sim.set_state(bad)
    assert sim.state.x.tobytes() == s.x.tobytes()  # nothing changed


def test_unavailable_is_its_own_class():
    assert issubclass(nbodyh.UnavailableError, nbodyh.Error)
    s = nbodyh.outer_solar_system()
    with pytest.raises(nbodyh.UnavailableError):
        nbodyh.Simulation(s, method="whfast", engine="cuda")
    with pytest.raises(nbodyh.UnavailableError):
        nbodyh.Simulation(s, mpi_comm=object())
    if not nbodyh.simd_available("avx512"):
        with pytest.raises(nbodyh.UnavailableError):
            nbodyh.Simulation(s, simd="avx512")


def test_not_finite_is_floating_point_error_with_the_state_kept():
    s = nbodyh.System(x=[0, 0], y=[0, 0], z=[0, 0], vx=0, vy=0, vz=0, m=1)   # coincident, no softening
    sim = nbodyh.Simulation(s, engine="simple")
    with pytest.raises(FloatingPointError):
        sim.step()
    assert sim.stats.steps == 0 and np.all(sim.state.x == 0)


def test_io_and_format_errors(tmp_path):
    with pytest.raises(OSError) as e:
        nbodyh.load(str(tmp_path / "missing.nbody"))
    assert "missing.nbody" in str(e.value) and "No such file" in str(e.value)   # the library's reason
    (tmp_path / "junk.nbody").write_bytes(b"not a snapshot at all" * 10)
    with pytest.raises(nbodyh.FormatError) as e:
        nbodyh.load(str(tmp_path / "junk.nbody"))
    assert isinstance(e.value, ValueError) and isinstance(e.value, nbodyh.Error)
    assert "junk.nbody" in str(e.value) and "bad magic" in str(e.value)
    good = nbodyh.plummer(10)
    good.save(str(tmp_path / "good.nbody"))
    data = bytearray((tmp_path / "good.nbody").read_bytes())
    data[60] ^= 1
    (tmp_path / "flipped.nbody").write_bytes(bytes(data))
    with pytest.raises(nbodyh.FormatError, match="checksum mismatch"):
        nbodyh.load(str(tmp_path / "flipped.nbody"))
    (tmp_path / "cut.nbody").write_bytes(bytes(data[:-5]))
    with pytest.raises(nbodyh.FormatError, match="truncated"):
        nbodyh.load(str(tmp_path / "cut.nbody"))
    with pytest.raises(OSError, match="No such file") as e:
        nbodyh.plummer(10).save(str(tmp_path / "no" / "such" / "dir" / "s.nbody"))
    assert "s.nbody.tmp" in str(e.value)
    with pytest.raises(OSError):
        nbodyh.checkpoint_load(str(tmp_path / "missing.ckpt"))
    with pytest.raises(nbodyh.FormatError):
        nbodyh.checkpoint_load(str(tmp_path / "junk.nbody"))


def test_step_too_small_and_cancel_classes():
    assert issubclass(nbodyh.StepTooSmallError, nbodyh.Error)
    assert issubclass(nbodyh.CancelledError, nbodyh.Error)
    assert issubclass(nbodyh.BusyError, RuntimeError)
    sim = nbodyh.Simulation(nbodyh.pythagorean(), method="rkdp", tolerance=1e-12, dt_min=0.1)
    with pytest.raises(nbodyh.StepTooSmallError):
        sim.advance(70.0)


def test_library_warnings_become_python_warnings():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nbodyh.Simulation(nbodyh.plummer(64), engine="tree", method="rkdp", tolerance=1e-10, softening=0.01)
    assert any(issubclass(x.category, nbodyh.NbodyWarning) and "tolerance" in str(x.message) for x in w)


def test_log_callable_receives_the_lines():
    lines = []
    with pytest.raises(ValueError):
        nbodyh.Simulation(nbodyh.plummer(8), method="leapfrog", extra_force=lambda *a: None,
                          log=lambda level, msg: lines.append((level, msg)))
    assert lines and lines[0][0] == "error"


# ---- steering: test particles, collisions, exits, orbital elements ---------------------------
def test_test_particles_feel_but_do_not_pull():
    s = nbodyh.outer_solar_system()
    s2 = s.add_orbit(0.0, (3.0, 0.1), primary=0)            # a massless body
    assert s2.n == 6 and s.n == 5
    sim = nbodyh.Simulation(s2, n_active=5, method="rk4", dt=0.1)
    assert sim.n_active == 5
    sim.advance(10.0)
    ref = nbodyh.Simulation(s, method="rk4", dt=0.1)
    ref.advance(10.0)
    assert sim.state.x[:5].tobytes() == ref.state.x.tobytes()   # the planets never felt it


def test_collisions_merge_and_stop_events():
    s = nbodyh.System(x=[-1, 1], y=0, z=0, vx=[0.5, -0.5], vy=0, vz=0, m=0.5)
    sim = nbodyh.Simulation(s, collision="merge", method="rk4", dt=1e-3)
    sim.radii = [0.1, 0.1]
    sim.advance(3.0)
    assert sim.n == 1 and sim.event.merges == 1
    assert nbodyh.measure(sim.state).mass == pytest.approx(1.0)
    sim = nbodyh.Simulation(s, collision="stop", method="rk4", dt=1e-3)
    sim.radii = np.array([0.1, 0.1])
    ev = sim.advance(3.0)
    assert ev is not None and ev.kind == "collision" and (ev.i, ev.j) == (0, 1) and sim.t < 3.0
    sim = nbodyh.Simulation(s, stop_distance=0.5, method="rk4", dt=1e-3)
    assert sim.advance(3.0).kind == "close_encounter"


def test_orbital_elements_round_trip():
    s = nbodyh.outer_solar_system()
    o = s.get_orbit(1, primary=0)
    assert 5.1 < o.a < 5.3 and 0.04 < o.e < 0.06                 # Jupiter
    mu = s.m[0] + s.m[1]
    pos, vel = nbodyh.orbit_to_state(mu, o)
    back = nbodyh.orbit_from_state(mu, pos, vel)
    assert np.allclose(back, o, rtol=1e-12, atol=1e-12)
    s.move_to_com()
    assert abs(nbodyh.measure(s).cx) < 1e-14
    assert len(s.orbits()) == 4


def test_checkpoint_continues_bit_for_bit(tmp_path):
    kw = dict(method="rkdp", tolerance=1e-9, softening=0.01)
    a = nbodyh.Simulation(nbodyh.plummer(100, seed=9), **kw)
    a.advance(0.05)
    a.checkpoint_save(str(tmp_path / "c.ckpt"))
    a.advance(0.1)
    b = nbodyh.checkpoint_load(str(tmp_path / "c.ckpt"), **kw)
    assert isinstance(b, nbodyh.Simulation)
    b.advance(0.1)
    assert a.state.x.tobytes() == b.state.x.tobytes()
    with pytest.raises(ValueError):
        nbodyh.checkpoint_load(str(tmp_path / "c.ckpt"), method="rk4")


def test_archive_records_and_restarts(tmp_path):
    path = str(tmp_path / "run.archive")
    sim = nbodyh.Simulation(nbodyh.plummer(50, seed=3), softening=0.01)
    sim.archive_attach(path, every_t=0.01)
    sim.advance(0.05)
    sim.archive_attach(None)
    with nbodyh.archive_open(path) as a:
        assert len(a) >= 5 and np.all(np.diff(a.times) > 0)
        assert "snapshots" in repr(a)
        b = a.load(2, softening=0.01)
        t2 = a.times[2]
    assert b.t == t2
    b.advance(0.05)
    assert b.state.x.tobytes() == sim.state.x.tobytes()


# ---- documentation -----------------------------------------------------------------------------
def test_everything_public_has_a_docstring():
    missing = []
    for name in nbodyh.__all__:
        obj = getattr(nbodyh, name)
        if isinstance(obj, tuple):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if not attr.startswith("_") and callable(value) and not (getattr(value, "__doc__", "") or "").strip():
                    missing.append(name + "." + attr)
    for cls in (nbodyh.System, nbodyh.Simulation):
        for attr in dir(cls):
            if not attr.startswith("_") and not (getattr(cls, attr).__doc__ or "").strip():
                missing.append(cls.__name__ + "." + attr)
    assert not missing, missing


def test_type_stubs_name_everything_public():
    import ast
    import os
    stub = os.path.join(os.path.dirname(nbodyh.__file__), "__init__.pyi")
    tree = ast.parse(open(stub).read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    assert set(nbodyh.__all__) <= names, set(nbodyh.__all__) - names
    sim_stub = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Simulation"][0]
    kwargs = {a.arg for f in sim_stub.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
              for a in f.args.kwonlyargs}
    assert set(nbodyh.Simulation(nbodyh.plummer(4)).desc) <= kwargs


def test_every_result_code_maps_to_its_exception():
    expected = [None, ValueError, MemoryError, nbodyh.UnavailableError, nbodyh.DeviceError, FloatingPointError,
                nbodyh.StepTooSmallError, OSError, nbodyh.FormatError, nbodyh.CancelledError, None,
                nbodyh.BusyError]                       # NBODY_OK ... NBODY_STOPPED, NBODY_ERR_BUSY
    for code, exc in enumerate(expected):
        if exc is None:
            assert nbodyh._nbodyh._raise_result(code) is None
        else:
            with pytest.raises(exc):
                nbodyh._nbodyh._raise_result(code)
    assert issubclass(nbodyh.FormatError, ValueError) and issubclass(nbodyh.BusyError, RuntimeError)
