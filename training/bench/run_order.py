"""The order benchmark processes run in: rounds, every other one reversed.

Why: a process's position in its round can bias it -- the GPU left hot or idle by the process
before, that process's teardown still running. With one fixed order such an effect always
lands on the same variant; on the H200's 8-layer prefill, verify (always run right after
DEFAULT) read a 0.2-0.3 % slower CUDA-graph replay than DEFAULT in 9 of 10 same-run pairs,
on the same kernels (reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive). Reversing every other round (A B, B A, A B, ...)
puts each variant first as often as last, so a position effect cancels over pairs of rounds
instead of reading as a difference between variants. Round 0 keeps the given order (baseline
first), so a single round runs as before.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def alternating_rounds(items: Sequence[T], repeats: int, last: Sequence[T] = ()) -> list[tuple[int, T]]:
    """(round, item) pairs: `repeats` rounds of `items`, odd rounds in reverse order. Items in
    `last` end every round, unreversed (the slowest: a time budget then cuts them first)."""
    head = [i for i in items if i not in last]
    tail = [i for i in items if i in last]
    return [(r, item) for r in range(repeats) for item in [*(head if r % 2 == 0 else head[::-1]), *tail]]
