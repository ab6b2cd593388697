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
    """Stable hash of everything a decision depends on (device, op, sizes, strides, dtype, model).
    A "candidates" list (~2,400 keys per GEMM) is hashed as joined text, not JSON: a fifth of
    the cost, inside the per-GEMM decision budget."""
    rest = dict(fields)
    candidates = rest.pop("candidates", None)
    h = hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode())
    if candidates is not None:
        h.update(b"\0candidates\0" + "\n".join(map(str, candidates)).encode())
    return h.hexdigest()[:32]


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
        fields = dict(fields or {})
        if isinstance(fields.get("candidates"), (list, tuple)):
            # the key hashes the whole list; the file records its size (~100 KB of keys otherwise)
            fields["candidates"] = f"{len(fields['candidates'])} candidates (hashed into the key)"
        payload = {"format": CACHE_FORMAT, "kept": list(kept), "key_fields": fields}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:  # one write: json.dump's many small ones cost ~1 ms here
                f.write(json.dumps(payload, sort_keys=True, default=str))
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
