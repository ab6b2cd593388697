"""The op kinds kselect can decide, one line each. An op with no entry is undecided: it gets
exactly stock Inductor's choices, under the user's own settings (gate.py)."""

from __future__ import annotations

from kselect.selector.ops import grouped_mm, mm, scaled_mm
from kselect.selector.ops.kind import OpKind

KINDS: dict[str, OpKind] = {
    kind.name: kind
    for kind in (
        *mm.KINDS,  # mm, addmm, bmm, baddbmm, a frozen Linear's GEMM on the CPU
        scaled_mm.SCALED_MM,
        grouped_mm.GROUPED_MM,
    )
}


def get(name: str) -> OpKind | None:
    """The op kind of this name (a gate kind or a Problem's `op`), or None: not decided."""
    return KINDS.get(name)


def of(problem) -> OpKind:
    """The op kind of a Problem (or a GroupedProblem) kselect is deciding."""
    return KINDS[problem.op]


def decided(ranker) -> list[str]:
    """The op kinds decided with `ranker`, as `kselect doctor` lists them: those any model
    decides, then those decided only where the ranker holds them (with what of them it holds)."""
    always = sorted(filter(None, (k.decided_as(ranker) for k in KINDS.values() if not k.held_only)))
    held = [k.decided_as(ranker) for _, k in sorted((k.name, k) for k in KINDS.values() if k.held_only)]
    return always + [h for h in held if h]
