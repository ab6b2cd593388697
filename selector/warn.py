"""One warning per cause: a selector fallback must be visible once, not once per GEMM. What is
no fault (an op kselect does not model) is told once per cause too, as an INFO line."""

from __future__ import annotations

import logging
import threading
import warnings

log = logging.getLogger("kselect.selector")
_seen: set[str] = set()
_lock = threading.Lock()


class KselectFallbackWarning(UserWarning):
    """kselect left a GEMM to stock Inductor (or ignored a cache file); the message says why."""


def warn_once(cause: str, message: str) -> bool:
    """Warn (and log) the first time `cause` happens in this process; True if it warned."""
    with _lock:
        if cause in _seen:
            log.debug("%s (repeat, not warned again)", message)
            return False
        _seen.add(cause)
    log.warning(message)
    warnings.warn(message, KselectFallbackWarning, stacklevel=3)
    return True


def inform_once(cause: str, message: str) -> bool:
    """Log `message` at INFO the first time `cause` happens (no warning); True if it logged."""
    with _lock:
        if cause in _seen:
            return False
        _seen.add(cause)
    log.info(message)
    return True


def reset_warnings() -> None:
    """Forget which causes already warned or informed (enable() calls it: a new configuration,
    new lines)."""
    with _lock:
        _seen.clear()
