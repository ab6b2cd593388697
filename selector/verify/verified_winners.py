"""What verify caches once Inductor benchmarked the kept set: the winner, unless ATen's time may be
misread (`verified_keep`). Which cache entries a measurement settles, and writing the winner into
each, are the verifier's (verify/verifier.py)."""

from __future__ import annotations

import math
from typing import Mapping

from kselect.kernels.candidate import Candidate
from kselect.selector.decide.candidate_sets import is_aten

# Inductor's autotune times cuBLAS up to 1.57x slower than it really runs on the H200
# (reports/2026-12-02-faithfulness-h200); Triton choices it times within ~6%.
ATEN_MISREAD_GPU = 1.6


def verified_keep(
    measured: Mapping[Candidate, float], device_type: str, aten_faithful: bool = False
) -> list[Candidate]:
    """What verify mode caches after Inductor benchmarked the kept set: its winner, unless the
    winner could be an artefact of Inductor mis-timing ATen on a GPU (ATen within the known
    misread factor, and ATen not timed under a CUDA graph) -- then both stay, and the next
    compile measures just those two."""
    finite = {c: t for c, t in measured.items() if t == t and t != math.inf and t > 0}
    if not finite:
        return []
    best = min(finite, key=finite.get)
    if device_type == "cpu" or aten_faithful or is_aten(best):
        return [best]
    aten = [c for c in finite if is_aten(c)]
    if aten and min(finite[c] for c in aten) <= finite[best] * ATEN_MISREAD_GPU:
        return [best, min(aten, key=finite.get)]
    return [best]
