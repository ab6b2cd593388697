"""Keep a decision fast while other Python threads are busy: a short GIL switch interval.

Why: ranking releases the GIL dozens of times (every numpy ufunc over ~2,400 rows, each
XGBoost call). When another thread of the compiling process runs Python meanwhile, every
re-acquisition waits up to the interpreter's switch interval (5 ms), and a 4 ms decision
took 14-25 ms on the H200 host (reports/2026-12-02-bench-exhaustive-h200). `kselect bench
rank --contend` measures it: with one busy Python thread a 2,000-
candidate ranking went from 6.8 ms to 282 ms on the 2-core dev machine, and to 18 ms with
a 50 us interval. The interval is process-wide, so nested and concurrent decisions share
one reference count: the first to enter sets it, the last to leave restores the old value.
"""

from __future__ import annotations

import contextlib
import sys
import threading

DECISION_SWITCH_INTERVAL_S = 5e-5

_lock = threading.Lock()
_depth = 0
_saved = 0.0


@contextlib.contextmanager
def short_switch_interval(seconds: float = DECISION_SWITCH_INTERVAL_S):
    """Within the block, a thread waiting for the GIL gets it back within ~`seconds`."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(min(seconds, _saved))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.setswitchinterval(_saved)
