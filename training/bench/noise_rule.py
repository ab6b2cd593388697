"""The bench's noise rule: a variant's kernel time on a GEMM against plain torch.compile's,
read over the processes of `kselect bench gemm` runs (the rule fixed for the unseen set,
reports/2026-12-06-unseen-bench-h100-noise-rule/noise_rule.py, and read the same way since).

A GEMM's noise is max/min of plain's times over its processes, floored at plain's median noise
over the set; the variant's median over its processes is held against the mean of plain's.
Beyond the noise either way is slower or faster; inside it, a tie.
"""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class AgainstPlain:
    """One GEMM's reading: the variant's median time over plain's mean, and the GEMM's noise."""

    ratio: float
    noise: float

    @property
    def slower(self) -> bool:
        return self.ratio > self.noise

    def faster(self, min_gain: float = 0.0) -> bool:
        """Faster beyond the noise, and by more than `min_gain` (a fraction of plain's time)."""
        return self.ratio < 1 / max(self.noise, 1 + min_gain)


def kernel_times(rows) -> dict:
    """problem -> variant -> its kernel times over the processes (rows without one skipped)."""
    times: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        if r.get("kernel_ms") is not None:
            times[r["problem"]][r["variant"]].append(r["kernel_ms"])
    return times


def ratio_to_plain(plain: list[float], other: list[float]) -> float:
    """The other variant's median time over plain's mean."""
    return statistics.median(other) / statistics.mean(plain)


def against_plain(times: dict, variant: str) -> dict[str, AgainstPlain]:
    """Every GEMM of `times` (kernel_times) that plain and `variant` both measured, read by the
    rule; the floor is taken over every GEMM plain measured."""
    spreads = [max(v["plain"]) / min(v["plain"]) for v in times.values() if v.get("plain")]
    if not spreads:
        return {}
    floor = statistics.median(spreads)
    return {
        key: AgainstPlain(
            ratio=ratio_to_plain(v["plain"], v[variant]),
            noise=max(max(v["plain"]) / min(v["plain"]), floor),
        )
        for key, v in times.items()
        if v.get("plain") and v.get(variant)
    }
