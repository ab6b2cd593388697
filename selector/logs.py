"""kselect's logs under torch's own logging switches.

`TORCH_LOGS=+kselect` (or `torch._logging.set_logs(kselect=logging.DEBUG)`) turns on every
kselect log line, as `+inductor` does Inductor's; kselect's decision lines also go to
Inductor's `autotuning` artifact, so `TORCH_LOGS=autotuning` shows which kernels kselect kept
beside what Inductor itself benchmarked.
"""

from __future__ import annotations

import logging
import os

LOGGER = "kselect.selector"
_registered = False
_autotuning: logging.Logger | None = None


def register_with_torch_logs() -> None:
    """Make `kselect` a name TORCH_LOGS and set_logs know (once per process; never raises)."""
    global _registered, _autotuning
    if _registered:
        return
    _registered = True
    try:
        from torch._logging import _internal

        new = "kselect" not in _internal.log_registry.log_alias_to_log_qnames
        if new:
            _internal.register_log("kselect", "kselect")
        _autotuning = _internal.getArtifactLogger(LOGGER, "autotuning")
        if new and os.environ.get("TORCH_LOGS", "").strip():
            # torch read TORCH_LOGS before kselect's names existed: read it again, which also
            # gives kselect's logger torch's handler
            _internal._init_logs()
    except Exception:  # a torch without this registry: plain Python logging still works
        _autotuning = None


def log_decision(msg: str, *args) -> None:
    """One decision line: kselect's log at INFO, and Inductor's autotuning artifact."""
    logging.getLogger(LOGGER).info(msg, *args)
    register_with_torch_logs()
    if _autotuning is not None:
        _autotuning.debug(msg, *args)
