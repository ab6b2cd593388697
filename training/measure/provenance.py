"""Which kselect code produced a measurement: a digest of the installed package's sources and
shipped models. Benches record it beside the torch and GPU versions, so results of different
code are never pooled unknowingly (a device copy of the tree has no git history to ask)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_PACKAGES = ("kselect.selector", "kselect.kernels", "kselect.training", "kselect.models")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """12 hex digits over every .py and shipped model file of kselect, by path and content."""
    import importlib

    h = hashlib.sha256()
    for name in _PACKAGES:
        root = Path(importlib.import_module(name).__file__).parent
        files = sorted(
            p
            for p in root.rglob("*")
            if p.suffix in (".py", ".json", ".ubj") and p.is_file() and "__pycache__" not in p.parts
        )
        for path in files:
            h.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]
