"""kselect's own enumeration of the candidates Inductor's template generators would yield for a
GEMM (the early decision decides over it), and pulling just the kept ones out of Inductor's lazy
generators afterwards."""

from __future__ import annotations

import functools
from typing import Callable

from kselect.kernels.candidate import Candidate
from kselect.selector.compat.choice_candidates import ktc_candidate, template_kind
from kselect.selector.identity_memo import IdentityMemo


class PlanMissed(Exception):
    """An early decision named a choice Inductor's generators did not yield (e.g. a config its
    heuristic prunes on this GPU): the handler then takes the usual path, generating all."""


def template_candidates(problem, templates, search_space: str, generate: Callable | None = None) -> tuple | None:
    """The candidates Inductor's generators would yield for `templates`, in Inductor's template
    order: kselect's own enumeration of ATen and the Triton tile/decompose-k templates (rests on
    kernels/triton/space.py equalling Inductor's heuristics: tests/kernels/test_triton_space.py on the
    CPU, tests/kernels/test_gpu_space.py on the H200), and `generate(template)` -- Inductor's own
    generator, mapped -- for any other template (torch 2.11 passes ROCm's contiguous_mm on CUDA
    too, where it yields nothing). None when such a template comes and `generate` is None.

    A tuple; built from memoised parts only (the usual case), it is the same object for every
    GEMM with the same parts, i.e. of one size class, so the ranker's per-candidate work
    (features.featurize_candidates) is remembered per size class."""
    from kselect.kernels.triton.space import template_space

    space = search_space.lower()
    parts: list = []
    fresh = False  # a part Inductor generated for this GEMM: no memo
    for t in templates:
        backend, name = template_kind(t)
        if backend == "aten":
            parts.append(_aten_part(name))
        elif backend == "triton" and name in ("mm", "persistent_tma", "decompose_k"):
            parts.append(template_space(problem, name, space))
        elif generate is not None:
            part = tuple(generate(t))
            fresh = fresh or bool(part)
            parts.append(part)
        else:
            return None
    return _join(parts) if fresh else _JOINED.of_parts(tuple(parts))


@functools.lru_cache(maxsize=None)
def _aten_part(name: str) -> tuple:
    return (Candidate.make("aten", name),)


def _join(parts: tuple) -> tuple:
    return tuple(c for part in parts for c in part)


# parts (memoised tuples, interned ATen) -> one joined tuple, by the identity of each part
_JOINED = IdentityMemo(_join, size=256)


def templates_of(templates, candidates) -> list:
    """The templates (Inductor objects) that generate any of `candidates`."""
    wanted = {(c.backend, c.template) for c in candidates}
    return [t for t in templates if template_kind(t) in wanted]


def pick_ktcs(template_choices: dict, wanted) -> list:
    """The KTCs that map to the `wanted` candidates, pulled from Inductor's lazy generators
    only until all are found (each KTC pulled costs Inductor a config conversion); raises
    PlanMissed when a generator runs out first."""
    left = set(wanted)
    found = []
    for gen in template_choices.values():
        for ktc in gen:
            cand = ktc_candidate(ktc)
            if cand in left:
                found.append(ktc)
                left.discard(cand)
                if not left:
                    return found
    raise PlanMissed(f"Inductor generated none of {sorted(map(str, left))[:4]}")
