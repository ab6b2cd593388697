"""What every verb writes besides its result: progress on stderr (log lines, and a bar with
an ETA for each long loop) and the command line it was run as (reports quote it).

Progress goes to stderr, so stdout carries only the result (`--json`). A bar is drawn only
on a terminal; `kselect --quiet` silences bars and log lines alike. The logic modules never
print progress themselves: they take a `log(message)` callable and a
`progress(what, done, total)` callable, which a Console provides.
"""

from __future__ import annotations

import shlex
import sys

from tqdm import tqdm


def invocation(args) -> str:
    """The command as the user typed it: `kselect ` and the arguments main() parsed."""
    return "kselect " + shlex.join(getattr(args, "argv", None) or sys.argv[1:])


class Console:
    """A verb's progress output: `log` for lines, `progress` for loops, each drawn as a bar
    with its rate and ETA. A loop's bar closes when it reaches its total or another loop
    reports."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self._bar: tqdm | None = None
        self._what = ""

    @classmethod
    def of(cls, args) -> Console:
        """The console `kselect [--quiet] VERB ...` asked for."""
        return cls(quiet=bool(getattr(args, "quiet", False)))

    def log(self, message: str) -> None:
        """One progress line on stderr, printed above the bar being drawn."""
        if not self.quiet:
            tqdm.write(str(message), file=sys.stderr)
            sys.stderr.flush()

    def progress(self, what: str, done: int, total: int) -> None:
        """`done` of `total` steps of the loop `what` are finished (the total may change as
        the loop learns its size)."""
        if self.quiet:
            return
        if self._bar is None or what != self._what:
            self.close()
            # disable=None: drawn only when stderr is a terminal
            self._bar = tqdm(
                desc=what, total=total, unit="step", file=sys.stderr, disable=None, dynamic_ncols=True, leave=False
            )
            self._what = what
        bar = self._bar
        if not bar.disable:
            bar.total = total
            bar.update(done - bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        """Take down the bar being drawn, if any."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
