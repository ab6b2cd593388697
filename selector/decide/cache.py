"""Persistent decision cache: one small JSON file per decision, so a recompile reuses it.

One file per key means processes compiling at once never share a file; each write goes to
a private temp file first and `os.replace` publishes it atomically (selector/atomic_write.py),
so a reader sees either nothing or a whole decision; files get the mode the umask gives. A file
that is not a decision (bad JSON, not UTF-8, JSON that is not an object) is ignored with one
warning naming it, never fatal: the GEMM is decided again and the file rewritten.
The selector's own decisions are written by a background thread (`put_later`): the file
write costs ~0.5-1 ms, a fifth of the per-GEMM decision budget; this process reads its
queued decisions back at once, and they are flushed at exit.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import queue
import threading
from pathlib import Path
from typing import Iterable, Mapping

from kselect.selector.atomic_write import write_text
from kselect.selector.identity_memo import IdentityMemo
from kselect.selector.warn import warn_once

CACHE_FORMAT = 1

_DIGESTS: dict[str, int] = {}  # candidate key -> its 64-bit digest (a process sees a few thousand)
_MASK = (1 << 64) - 1


def _digest(key: str) -> int:
    d = _DIGESTS.get(key)
    if d is None:
        d = _DIGESTS[key] = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return d


def candidate_set_digest(keys: Iterable[str]) -> str:
    """Order-free digest of a candidate-key collection: count + sum of per-key 64-bit digests.

    Why not sort and hash the ~2,400 keys: that cost ~0.5 ms per GEMM; memoised per-key digests
    summed cost a fifth of it, and Inductor listing the same choices in another order still
    hits. Collisions need two different sets of one size with equal sums (~2^-64). A tuple
    (the selector's keys of a size class's candidates) is digested once (identity_memo)."""
    return _TUPLE_DIGESTS(keys) if type(keys) is tuple else _set_digest(keys)


def _set_digest(keys: Iterable[str]) -> str:
    keys = keys if isinstance(keys, (list, tuple)) else list(keys)
    try:
        total = sum(map(_DIGESTS.__getitem__, keys))  # the common case: every key seen before
    except (KeyError, TypeError):
        total = sum(_digest(str(k)) for k in keys)
    return f"{len(keys)}:{total & _MASK:016x}"


_TUPLE_DIGESTS = IdentityMemo(_set_digest)


def decision_key(fields: Mapping) -> str:
    """Stable hash of everything a decision depends on (device, op, sizes, strides, dtype, model).
    A "candidates" collection (~2,400 keys per GEMM) enters as its candidate_set_digest."""
    rest = dict(fields)
    candidates = rest.pop("candidates", None)
    h = hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode())
    if candidates is not None:
        h.update(b"\0candidates\0" + candidate_set_digest(candidates).encode())
    return h.hexdigest()[:32]


class DecisionCache:
    """Kept candidate keys per decision key, as JSON files under `root`."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        path = self._path(key)
        queued = _WRITER.queued(path)
        if queued is not None:
            return queued
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):  # valid JSON, but null, a list, a string...
                raise ValueError(f"a JSON {type(data).__name__}, not an object")
            if (
                data.get("format") != CACHE_FORMAT
                or not isinstance(data.get("kept"), list)
                or not all(isinstance(k, str) for k in data["kept"])
                or not data["kept"]
            ):
                raise ValueError("unexpected content")
            return list(data["kept"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            # a miss: the GEMM is decided again and its decision replaces this file
            warn_once(
                "cache-corrupt",
                f"kselect: ignoring unreadable decision-cache file {path} ({exc}); deciding again and rewriting it",
            )
            return None

    def put(self, key: str, kept: list[str], fields: Mapping | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = dict(fields or {})
        if isinstance(fields.get("candidates"), (list, tuple)):
            # the key hashes the whole list; the file records its size (~100 KB of keys otherwise)
            fields["candidates"] = f"{len(fields['candidates'])} candidates (hashed into the key)"
        payload = {"format": CACHE_FORMAT, "kept": list(kept), "key_fields": fields}
        # one write (json.dump's many small ones cost ~1 ms here); mode as the umask gives, so
        # others sharing the cache directory can read it
        write_text(path, json.dumps(payload, sort_keys=True, default=str))

    def put_later(self, key: str, kept: list[str], fields: Mapping | None = None) -> None:
        """put() on a background writer thread; any cache of this process on the same directory
        get()s it at once."""
        _WRITER.submit(self, key, kept, fields)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every put_later entry (of any cache in this process) is on disk."""
        _WRITER.flush(timeout)


class _BackgroundWriter:
    """One daemon thread writing queued decisions in order; remembers them until written."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queued: dict[Path, list[str]] = {}
        self._queue: queue.SimpleQueue | None = None

    def queued(self, path: Path) -> list[str] | None:
        with self._lock:
            kept = self._queued.get(path)
        return None if kept is None else list(kept)

    def submit(self, cache: DecisionCache, key: str, kept: list[str], fields: Mapping | None) -> None:
        kept = list(kept)
        with self._lock:
            self._queued[cache._path(key)] = kept
            if self._queue is None:
                self._queue = queue.SimpleQueue()
                threading.Thread(target=self._run, name="kselect-cache-writer", daemon=True).start()
                atexit.register(self.flush)
            self._queue.put((cache, key, kept, dict(fields or {})))

    def flush(self, timeout: float = 10.0) -> None:
        with self._lock:
            q = self._queue
        if q is None:
            return
        done = threading.Event()
        q.put(done)
        done.wait(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                item.set()
                continue
            cache, key, kept, fields = item
            try:
                cache.put(key, kept, fields)
            except Exception as exc:  # noqa: BLE001 -- a lost cache write costs a re-decision, no more
                warn_once(
                    f"cache-write:{type(exc).__name__}",
                    f"kselect: cannot write decision cache entry under {cache.root} ({exc})",
                )
            finally:
                path = cache._path(key)
                with self._lock:
                    if self._queued.get(path) is kept:
                        del self._queued[path]

    def _after_fork_in_child(self) -> None:
        """A forked child has no writer thread and may hold a copy of a taken lock: start afresh
        (what the parent had queued, the parent writes)."""
        self._lock = threading.Lock()
        self._queued = {}
        self._queue = None


_WRITER = _BackgroundWriter()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WRITER._after_fork_in_child)
