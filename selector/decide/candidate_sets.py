"""What the rankers and the policy read of a candidate list -- its keys, its backends, where ATen
is -- remembered per tuple (selector/identity_memo.py) for the early decision's candidate tuples."""

from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.selector.identity_memo import IdentityMemo


def is_aten(c: Candidate) -> bool:
    return c.backend == "aten"


def backends_of(candidates: Sequence[Candidate]) -> frozenset[str]:
    """The backends present (attrgetter in C: ~3x a set comprehension over 2,400 candidates;
    once per size class for the early decision's candidate tuples)."""
    return _BACKENDS(candidates)


_BACKEND = operator.attrgetter("backend")
_BACKENDS = IdentityMemo(lambda candidates: frozenset(map(_BACKEND, candidates)))


def candidate_keys(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """The candidates' keys, as a tuple (once per size class for the early decision's tuples;
    the same tuple object then also has its cache digest remembered)."""
    return _KEYS(candidates)


_KEYS = IdentityMemo(lambda candidates: tuple(c.key for c in candidates))
KEY_INDEX = IdentityMemo(lambda keys: {k: i for i, k in enumerate(keys)})  # key -> index, per keys tuple


def aten_indices(candidates: Sequence[Candidate]) -> np.ndarray:
    """Indices of the ATen candidates, ascending (once per size class for the early decision's
    tuples: a Python pass over ~2,400 candidates was most of the policy's time)."""
    return _ATEN(candidates)


_ATEN = IdentityMemo(
    lambda candidates: np.flatnonzero(
        np.fromiter((c.backend == "aten" for c in candidates), dtype=bool, count=len(candidates))
    )
)


def unseen_backends(candidates: Sequence[Candidate], ranker) -> list[int]:
    """Indices of candidates whose backend `ranker` has no data for, in listed order."""
    known = getattr(ranker, "backends", None)
    if known is None or backends_of(candidates) <= set(known):
        return []
    return [i for i, c in enumerate(candidates) if c.backend not in known]
