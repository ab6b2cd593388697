"""Tile families: candidates that differ only in how a tile runs (warps, stages, grouping), not
in its shape. verify keeps the best-ranked member of each family."""

from __future__ import annotations

from typing import Callable, Sequence

from kselect.kernels.candidate import Candidate

# Knobs that change how a tile runs, not its shape: candidates equal but for these are one
# family, and verify keeps only the best-ranked member of each (first_of_each_family).
FAMILY_FREE_KNOBS = frozenset({"GROUP_M", "num_stages", "num_warps"})


def tile_family(c: Candidate) -> tuple:
    """(backend, template, the knobs that shape the tile): BM/BN/BK, decompose-k's split."""
    return (c.backend, c.template, tuple(p for p in c.params if p[0] not in FAMILY_FREE_KNOBS))


def first_of_each_family(
    order: Sequence[int], candidates: Sequence[Candidate], n: int, too_slow: Callable[[int], bool] | None = None
) -> list[int]:
    """The first `n` of `order` (best first) that start a new tile family; after the first,
    a candidate `too_slow(i)` says is too costly to compile is passed over, and the next
    candidate takes its place -- another member of its family (other warps or stages) may
    compile quicker (see CompilePrice).

    Why families: the model's near-ties are mostly one tile with other warps or stages. Of the 49
    held-out GEMMs where the adaptive rule keeps two or more, 35 kept two members of one family
    (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k s3: lm_head kept BN256 S3 with 8 and with 4 warps, 0.2 % apart,
    each a ~0.2-0.4 s compile). Held out (404 shapes, leave-one-family-out), keeping one per
    family at the same count: fixed top 4 gets 99.15 % of the best instead of 99.01 (oracle
    shapes 97.84 vs 97.36, within 1 % 71.7 vs 69.8 %), top 3 98.92 vs 98.73, top 2 98.46 vs
    98.43; the adaptive default 94.39 vs 94.40 % (oracle within 1 %: 60.4 vs 59.4 %)."""
    seen: set = set()
    out: list[int] = []
    for i in order:
        if len(out) >= n:
            break
        fam = tile_family(candidates[i])
        if fam in seen or (out and too_slow is not None and too_slow(int(i))):
            continue
        seen.add(fam)
        out.append(int(i))
    return out
