"""What verify measured of a kept set (`Measured`: per choice its median, its interleaved rounds,
why it was dropped) and the choice it hands Inductor (`Measured.winner`): the fastest template
that beats ATen beyond the noise of the same rounds, else ATen. selector/verify/timing.py
measures; this module only reads the numbers."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

# A template replaces ATen only when it is faster in the median of its paired (same-round)
# ratios by more than this, and by more than half those ratios' range: gaps under 1 % lie
# inside plain torch.compile's own process-to-process noise on the H100 (median 0.66 %, 90th
# percentile 2.8 %; reports/2026-12-05-unseen-bench-h100), where a template pick buys nothing
# and can lose.
MIN_MARGIN = 0.01


class VerifyTimingUnavailable(RuntimeError):
    """This set of choices cannot be measured here; Inductor's own benchmark must do it."""


@dataclass
class Measured:
    """Per kept choice (same order): median ms, or inf with the reason it was dropped."""

    ms: list[float]
    dropped: dict[int, str] = field(default_factory=dict)
    method: str = ""
    stats: dict[int, dict] = field(default_factory=dict)  # per timed choice: min/max/spread/reps
    compiled_in: str = ""  # where the templates compiled: threads, workers, mixed, none
    compiles: dict = field(default_factory=dict)  # template_compiles.Compiles.summary(): per-template times
    phases_ms: dict = field(default_factory=dict)  # operands, reference, compile_wait, first_runs, timing
    memory_mb: dict = field(default_factory=dict)  # CUDA: allocated before / after, reserved after

    rounds: dict[int, list[float]] = field(default_factory=dict)  # per timed choice: its round medians
    reference: int | None = None  # the ATen choice's index, which a template must beat beyond noise

    @property
    def best(self) -> int:
        """The kept choice verify hands Inductor (`winner`)."""
        return self.winner()

    def winner(self) -> int:
        """The fastest template that beats ATen beyond this decision's noise, else ATen.

        A template beats ATen when its paired ratio to ATen, round by round, has a median below
        1 - margin, margin = max(MIN_MARGIN, half the ratios' range). Without ATen's rounds
        (ATen dropped, or one reading) the fastest reading wins."""
        ms = self.ms
        finite = [i for i, t in enumerate(ms) if math.isfinite(t)]
        if not finite:
            raise VerifyTimingUnavailable("no kept choice compiled, ran and matched the reference")
        fastest = min(finite, key=lambda i: ms[i])
        ref = self.reference
        if ref is None or ref not in finite or ref not in self.rounds:
            return fastest
        aten = self.rounds[ref]
        beating = []
        for i in finite:
            if i == ref or i not in self.rounds or len(self.rounds[i]) != len(aten):
                continue
            ratios = sorted(t / a for t, a in zip(self.rounds[i], aten))
            margin = max(MIN_MARGIN, (ratios[-1] - ratios[0]) / 2)
            if statistics.median(ratios) < 1 - margin:
                beating.append(i)
        return min(beating, key=lambda i: ms[i]) if beating else ref
