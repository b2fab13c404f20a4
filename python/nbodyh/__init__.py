"""nbodyh: gravitational N-body simulation in Python, over the C library nbody.h.

Quick start
-----------
>>> import nbodyh
>>> s = nbodyh.plummer(1000, seed=42)
>>> sim = nbodyh.Simulation(s, engine="block", method="leapfrog", dt=1e-3, softening=0.01)
>>> sim.advance(0.1)
>>> e = nbodyh.measure(sim.state, softening=0.01).energy

Systems hold bodies as numpy views (``s.x``, ``s.vx``, ``s.m`` ...) of memory the System owns;
a Simulation takes every ``nbody_desc`` field of the C library by its C name as a keyword,
enum fields by their lower-case names ("block", "rkdp", "stackless"). ``advance`` releases
the GIL, stops on Ctrl-C with the last accepted step kept, and shows a progress bar with
``progress=True``. Errors are exceptions: ValueError (with the library's reason),
UnavailableError, FloatingPointError, OSError, FormatError. See docs/python.md.
"""
from . import _nbodyh
from ._nbodyh import (  # noqa: F401  (the package's names)
    ENGINES, METHODS, Archive, BusyError, CancelledError, DeviceError, Error, Event, FormatError,
    Invariants, NbodyWarning, Orbit, Progress, Stats, StepTooSmallError, UnavailableError,
    accelerations, available, checkpoint_load, collision, desc_check, figure_eight, galaxy, library_version, load,
    measure, method_adaptive, method_order, orbit_from_state, orbit_to_state, outer_solar_system, plummer,
    pythagorean, simd_available, uniform_cube, features,
)

__version__ = "0.1.0"

__all__ = [
    "System", "Simulation", "Archive", "Stats", "Invariants", "Event", "Orbit", "Progress",
    "Error", "UnavailableError", "FormatError", "DeviceError", "StepTooSmallError", "CancelledError",
    "BusyError", "NbodyWarning",
    "plummer", "uniform_cube", "galaxy", "collision", "figure_eight", "pythagorean", "outer_solar_system",
    "measure", "accelerations", "desc_check", "available", "simd_available", "method_order", "method_adaptive",
    "load", "checkpoint_load", "archive_open", "orbit_to_state", "orbit_from_state",
    "plot", "animate", "ENGINES", "METHODS", "CPU_ENGINES",
]

#: the engines that run on the CPU (every build has them)
CPU_ENGINES = ("simple", "openmp", "block", "tree")


class System(_nbodyh.System):
    __doc__ = """Bodies as a structure of arrays (the C library's nbody_system).

    Parameters
    ----------
    n : int, optional
        Number of bodies (zeros); or give the arrays.
    x, y, z, vx, vy, vz, m : array_like, optional
        Positions, velocities, masses: n values each (a scalar fills every body). Copied in once.
    t : float
        Time.

    Notes
    -----
    ``x, y, z, vx, vy, vz, m`` are numpy views of memory the System owns: reading costs no copy,
    and writing (``s.vx[:] *= -1`` or ``s.m = 1/n``) changes the System. A view keeps its System
    alive. A System keeps its size for life; ``add_orbit`` returns a new one.

    Examples
    --------
    >>> s = nbodyh.System(x=[0, 1], y=[0, 0], z=[0, 0], vx=[0, 0], vy=[0, 1], vz=[0, 0], m=[1, 1e-3])
    >>> s.n, s.x
    (2, array([0., 1.]))
    """

    __slots__ = ()

    def plot(self, **kwargs):
        """Draw the bodies (see nbodyh.plot); returns the matplotlib Figure."""
        return plot(self, **kwargs)

    def _repr_png_(self):
        """Jupyter shows a System as its picture (matplotlib needed; None without it)."""
        from . import _plot
        return _plot.png_bytes(self)

    def orbits(self, primary=None, G=1.0):
        """Orbital elements of bodies 1..n-1 (see get_orbit) as a list of Orbit."""
        return [self.get_orbit(i, primary=primary, G=G) for i in range(1, self.n)]

    def invariants(self, G=1.0, softening=0.0):
        """nbodyh.measure(self, G, softening)."""
        return measure(self, G=G, softening=softening)


class Simulation(_nbodyh.Simulation):
    __doc__ = """An N-body simulation (nbody_sim): a System integrated in time.

    Parameters
    ----------
    system : System
        The initial bodies and time (copied into the simulation).
    **desc
        Every field of the C library's ``nbody_desc`` by its C name; 0 or absent = the default.
        engine : {'default', 'simple', 'openmp', 'block', 'tree', 'cuda', 'cuda_tree', 'opencl', 'opencl_tree'}
        method : {'default', 'euler', 'midpoint', 'leapfrog', 'trapeze', 'rk4', 'rkck', 'rkdp', 'rkdverk',
                  'rkf', 'rkgl', 'rklc', 'adams', 'bs', 'radau', 'whfast', 'hermite'}
        order (Adams 1..5), G, softening, dt, tolerance (> 0: adaptive), dt_min, dt_max,
        theta, traversal {'stack', 'stackless'}, visit_order {'body', 'leaf'}, block_size,
        threads, device, devices, compensated, quadrupole, leaf_size, n_active (test
        particles after them), collision {'none', 'merge', 'bounce', 'stop'}, restitution,
        stop_distance, escape_distance, radau_control {'prs23', 'global', 'fixed'},
        simd {'default', 'portable', 'avx2', 'avx512'}, whfast_coordinates
        {'jacobi', 'democratic_heliocentric'}, whfast_corrector, extra_force_velocity_free,
        stepping {'default', 'shared', 'block'}, timestep_eta (Hermite's accuracy).
        Callables (through one trampoline; an exception raised in one stops the run, keeps
        the last accepted step and is raised again by step/advance):
        extra_force(t, x, y, z, vx, vy, vz, m, ax, ay, az)
            Add accelerations to ax, ay, az in place (numpy arrays valid during the call).
        before_step(sim), after_step(sim)
            Hooks around each accepted step; a true return stops the run (an Event 'hook').
        progress(info), progress_interval
            Called during advance every progress_interval seconds (0: every step) with a
            Progress; a true return cancels (CancelledError).
        log(level, message)
            Every line the library logs ('error', 'warning', 'info').

    Raises
    ------
    ValueError
        An invalid field or system, with the library's reason.
    UnavailableError
        The engine or SIMD level is not in this build or not on this machine.

    Examples
    --------
    >>> sim = nbodyh.Simulation(nbodyh.figure_eight(), method="rkdp", tolerance=1e-10)
    >>> sim.advance(6.32591398)
    >>> sim.stats.steps > 0
    True
    """

    __slots__ = ()

    def advance(self, t_end, progress=False):
        """Integrate to exactly t_end (nbody_advance), the GIL released.

        Parameters
        ----------
        t_end : float
            Where to land (>= t).
        progress : bool or callable
            True: a tqdm bar when tqdm is installed, else a plain line on stderr; a callable
            receives a Progress about every 0.1 s.

        Returns
        -------
        Event or None
            The Event when a hook, an exit condition (stop_distance, escape_distance) or a
            collision with collision='stop' stopped the run; None when it reached t_end.

        Raises
        ------
        KeyboardInterrupt
            Ctrl-C or Jupyter's stop: the simulation holds the last accepted step.
        FloatingPointError
            The state became NaN or Inf; the last good state is kept.
        Exception
            Whatever a callback raised, with the state of the last accepted step kept.
        """
        if progress is True:
            from . import _progress
            bar = _progress.Bar(self.t, t_end)
            try:
                return self._advance(t_end, bar)
            finally:
                bar.close(self.t)
        return self._advance(t_end, progress if callable(progress) else None)

    def edit(self):
        """A context manager for changing the state in place::

            with sim.edit() as s:      # s: a System holding the state
                s.vx *= -1             # numpy views: no copies
            # on exit: sim.set_state(s)
        """
        return _Edit(self)

    def __reduce__(self):
        raise TypeError("a Simulation cannot be pickled: use checkpoint_save / nbodyh.checkpoint_load")


class _Edit:
    def __init__(self, sim):
        self.sim = sim

    def __enter__(self):
        self.state = self.sim.state
        return self.state

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.sim.set_state(self.state)
        return False


_nbodyh._register_classes(System, Simulation)


def archive_open(path):
    """Open a snapshot archive for reading (nbody_archive_open): an Archive."""
    return Archive(path)


def plot(system, ax=None, **kwargs):
    """Draw a System with matplotlib: x-y positions coloured by speed, as the C PNGs.

    Parameters
    ----------
    system : System
    ax : matplotlib Axes, optional
        Where to draw; a new Figure when None.
    size : float
        Figure size in inches (new figures).
    lim : float, optional
        Half-width of the view; by default the 99th percentile of the distance from the
        centre of mass.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from . import _plot
    return _plot.plot(system, ax=ax, **kwargs)


def animate(sim, times, path, fps=20, **kwargs):
    """Advance `sim` through `times` and write one frame at each into an animation.

    Parameters
    ----------
    sim : Simulation
    times : sequence of float
        Increasing times (>= sim.t).
    path : str
        "*.gif" (Pillow) or "*.mp4" (ffmpeg).
    fps : int
    **kwargs
        Passed to plot.

    Returns
    -------
    str
        The path written.
    """
    from . import _plot
    return _plot.animate(sim, times, path, fps=fps, **kwargs)
