"""The candidates a collection measures for one problem: each backend's space in Inductor's
DEFAULT or EXHAUSTIVE list, or a sample ("sample": DEFAULT plus the first of EXHAUSTIVE in one
global hash order, so shapes that share a config sample it alike). Deterministic for a given
problem; the collector and the dataset's oracle read the same lists."""

from __future__ import annotations

import hashlib

from kselect.kernels.backend import get_backend
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem


def stable_hash(text: str) -> str:
    """A hash of `text` that is the same in every process (Python's hash() is salted)."""
    return hashlib.sha1(text.encode()).hexdigest()


def candidate_list(problem: Problem, backend_names: list[str], space: str, n_sample: int) -> list[Candidate]:
    """The candidates to measure for `problem`, deterministic for a given problem."""
    out: list[Candidate] = []
    for name in backend_names:
        backend = get_backend(name)
        if space == "sample":
            # DEFAULT plus the first candidates of EXHAUSTIVE in one global hash order of
            # candidate keys: every shape that shares a (clamped) config samples it alike,
            # so the whole dataset needs few distinct compiles.
            full = backend.candidates(problem, "exhaustive")
            chosen = dict.fromkeys(backend.candidates(problem, "default"))
            rest = sorted((c for c in full if c not in chosen), key=lambda c: stable_hash(c.key))
            chosen.update(dict.fromkeys(rest[: max(0, n_sample - len(chosen))]))
            order = {c: i for i, c in enumerate(full)}
            out += sorted(chosen, key=lambda c: order.get(c, len(order)))
        else:
            out += backend.candidates(problem, space)
    return out
