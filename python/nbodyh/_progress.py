"""advance(progress=True): a tqdm bar when tqdm is installed, else one line rewritten on stderr."""
import sys
import time


class Bar:
    """Called with a Progress about every 0.1 s during advance; close() at the end."""

    def __init__(self, t_start, t_end):
        self.t_start, self.t_end = float(t_start), float(t_end)
        self.span = max(self.t_end - self.t_start, 0.0)
        self.wall0 = time.monotonic()
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.tqdm = None
        else:
            self.tqdm = tqdm(total=self.span, desc="advance to t = %.6g" % self.t_end,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]")
        self.done = self.t_start

    def __call__(self, info):
        self._show(info.t, info.steps)

    def _show(self, t, steps=None):
        if self.tqdm is not None:
            self.tqdm.update(max(t - self.t_start, 0.0) - (self.done - self.t_start))
        else:
            share = (t - self.t_start) / self.span if self.span > 0 else 1.0
            sys.stderr.write("\radvance: %5.1f%%  t = %.6g / %.6g  %.1f s%s" % (
                100 * share, t, self.t_end, time.monotonic() - self.wall0,
                "" if steps is None else "  %d steps" % steps))
            sys.stderr.flush()
        self.done = t

    def close(self, t):
        self._show(t)
        if self.tqdm is not None:
            self.tqdm.close()
        else:
            sys.stderr.write("\n")
