"""Values derived from an immutable candidate tuple, remembered by the tuple's identity.

The early decision hands the ranker the same tuple object for every GEMM of one size class
(compat/enumeration.py's template_candidates memoises it). What depends only on the candidates -- their
encoding into feature arrays, their keys, the digest of those keys, the backends present --
is then computed once per size class instead of once per GEMM (~2,400 candidates each).

Keyed by id(): hashing a 2,400-element tuple by content would cost as much as recomputing.
Each entry holds the tuple itself, so its id cannot be reused by another object while the
entry lives. Only tuples are remembered: a list could change after the value was computed.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class IdentityMemo:
    """A small bounded map: immutable sequence (by identity) -> a value computed from it."""

    def __init__(self, compute: Callable[[tuple], T], size: int = 32):
        self.compute = compute
        self.size = size
        self._entries: dict[tuple, tuple[tuple, T]] = {}
        self._lock = threading.Lock()

    def __call__(self, seq) -> T:
        if type(seq) is not tuple:
            return self.compute(seq)
        return self._remembered((seq,), seq)

    def of_parts(self, parts: tuple) -> T:
        """compute(parts), remembered by the identity of each part (all immutable and long-lived,
        e.g. memoised tuples): `parts` itself may be a fresh tuple on every call."""
        return self._remembered(parts, parts)

    def _remembered(self, holders: tuple, arg) -> T:
        key = tuple(map(id, holders))
        hit = self._entries.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], holders)):
            return hit[1]
        value = self.compute(arg)
        with self._lock:
            if len(self._entries) >= self.size:  # size classes per process are few: forget all
                self._entries.clear()
            self._entries[key] = (holders, value)  # the holders keep their ids from being reused
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
