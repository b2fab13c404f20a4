"""Pictures: plot (x-y, coloured by speed like the C examples' PNGs), animate, PNG bytes for Jupyter.

Figures are made with matplotlib.figure.Figure and the Agg canvas: no pyplot state, so they
work headless (tests, servers) and never open windows by themselves.
"""
import io

import numpy as np


def _figure(size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(size, size), facecolor="black")
    FigureCanvasAgg(fig)
    return fig


def _view(system, lim):
    m = np.asarray(system.m)
    total = m.sum()
    w = m / total if total > 0 else np.full(system.n, 1.0 / system.n)
    cx, cy = float(np.dot(w, system.x)), float(np.dot(w, system.y))
    if lim is None:
        r = np.hypot(np.asarray(system.x) - cx, np.asarray(system.y) - cy)
        lim = float(np.percentile(r, 99)) * 1.1 if system.n > 3 else float(r.max()) * 1.3
        lim = lim if lim > 0 else 1.0
    return cx, cy, lim


def plot(system, ax=None, size=6.0, lim=None, center=None, cmap="turbo", s=None, title=None):
    speed = np.sqrt(np.asarray(system.vx) ** 2 + np.asarray(system.vy) ** 2 + np.asarray(system.vz) ** 2)
    if ax is None:
        fig = _figure(size)
        ax = fig.add_axes([0, 0, 1, 1])
    else:
        fig = ax.figure
    cx, cy, lim = _view(system, lim)
    if center is not None:
        cx, cy = center
    if s is None:
        s = max(0.3, min(30.0, 3000.0 / max(system.n, 1)))
    ax.set_facecolor("black")
    vmax = float(np.percentile(speed, 99)) if system.n > 3 else float(speed.max())
    ax.scatter(system.x, system.y, c=speed, s=s, cmap=cmap, vmin=0.0, vmax=vmax if vmax > 0 else 1.0,
               linewidths=0)
    ax.set_xlim(cx - lim, cx + lim)
    ax.set_ylim(cy - lim, cy + lim)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.02, 0.98, title if title is not None else "t = %.4g   N = %d" % (system.t, system.n),
            transform=ax.transAxes, color="white", va="top", fontsize=9)
    return fig


def close(fig):
    fig.clear()


def png_bytes(system, size=4.0, dpi=80):
    try:
        fig = plot(system, size=size)
    except ImportError:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="black")
    close(fig)
    return buf.getvalue()


def animate(sim, times, path, fps=20, size=5.0, dpi=80, lim=None, **kwargs):
    from matplotlib import animation
    times = [float(t) for t in times]
    if any(b < a for a, b in zip(times, times[1:])) or (times and times[0] < sim.t):
        raise ValueError("animate: times must increase from sim.t = %g" % sim.t)
    if path.endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    elif path.endswith(".mp4"):
        if not animation.FFMpegWriter.isAvailable():
            raise RuntimeError("animate: writing .mp4 needs ffmpeg on PATH (or write a .gif)")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise ValueError("animate: path must end in .gif or .mp4, not %r" % path)
    fig = _figure(size)
    ax = fig.add_axes([0, 0, 1, 1])
    state = sim.state
    center = None
    if lim is None:                      # one view for the whole film, from the first frame
        cx, cy, lim = _view(state, None)
        lim *= 1.5
        center = (cx, cy)
    with writer.saving(fig, path, dpi):
        for t in times:
            sim.advance(t)
            sim.get_state(out=state)
            ax.clear()
            plot(state, ax=ax, lim=lim, center=center, **kwargs)
            writer.grab_frame(facecolor="black")
    close(fig)
    return path
