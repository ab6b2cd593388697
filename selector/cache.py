"""Persistent decision cache: one small JSON file per decision, so a recompile reuses it.

One file per key means processes compiling at once never share a file; each write goes to
a private temp file first and `os.replace` publishes it atomically, so a reader sees either
nothing or a whole decision. A file that does not parse is ignored (one warning), never fatal.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Mapping

from .warn import warn_once

CACHE_FORMAT = 1


def decision_key(fields: Mapping) -> str:
    """Stable hash of everything a decision depends on (device, op, sizes, strides, dtype, model)."""
    return hashlib.sha256(json.dumps(dict(fields), sort_keys=True, default=str).encode()).hexdigest()[:32]


class DecisionCache:
    """Kept candidate keys per decision key, as JSON files under `root`."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text())
            if data.get("format") != CACHE_FORMAT or not isinstance(data.get("kept"), list) \
                    or not all(isinstance(k, str) for k in data["kept"]) or not data["kept"]:
                raise ValueError("unexpected content")
            return list(data["kept"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
            warn_once("cache-corrupt", f"kselect: ignoring unreadable decision-cache file {path} ({exc})")
            return None

    def put(self, key: str, kept: list[str], fields: Mapping | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"format": CACHE_FORMAT, "kept": list(kept), "key_fields": dict(fields or {})}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(payload, f, sort_keys=True, default=str)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
