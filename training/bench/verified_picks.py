"""Verify's GPU decisions, as `kselect bench gemm` measured them, turned into measured picks
(training/data/measured_picks.py) for the card's table: a GEMM a bench ran is a GEMM kselect has
measured, whether or not a dataset holds it.

Per GEMM of the runs (pooled over their processes; runs pool only as `bench gemm-pool` pools
them: one GPU, one torch, one Triton): verify must have chosen the same candidate in every
process, and every process of plain and verify been correct; otherwise the GEMM is left out.
- verify kept ATen: ATen is the pick;
- verify ran a template: the template is the pick only where it ran faster than plain's cuBLAS
  beyond the GEMM's noise (training/bench/noise_rule.py) and by more than the table's minimum
  gain -- the same bar as a dataset's pick; otherwise ATen.
Times are the compiled function's: the pick's is verify's median over its processes, ATen's
plain's mean.
"""

from __future__ import annotations

import collections
import statistics

from kselect.kernels.backend import get_backend
from kselect.kernels.problem import Problem, ProblemError
from kselect.training.bench.noise_rule import against_plain, kernel_times
from kselect.training.data.measured_picks import MIN_GAIN, MeasuredPick

VERIFY = "kselect-verify"


def bench_picks(rows: list[dict], source: str = "", min_gain: float = MIN_GAIN) -> list[MeasuredPick]:
    """One MeasuredPick per GEMM of `rows` (bench gemm rows) that verify decided the same way in
    every process, correct throughout."""
    times = kernel_times(rows)
    chosen: dict = collections.defaultdict(set)
    correct: dict = collections.defaultdict(lambda: True)
    for r in rows:
        if r.get("variant") in ("plain", VERIFY) and r.get("kernel_ms") is not None:
            correct[r["problem"]] &= bool(r.get("correct"))
            if r["variant"] == VERIFY:
                chosen[r["problem"]].add(r.get("chosen") or "")
    picks = []
    for key, reading in sorted(against_plain(times, VERIFY).items()):
        if len(chosen[key]) != 1 or "" in chosen[key] or not correct[key]:
            continue
        try:
            problem = Problem.from_key(key)
        except ProblemError as exc:
            raise ProblemError(f"{source}: {exc}") from None
        aten = get_backend("aten").candidates(problem)[0].key
        plain_ms, verify_ms = statistics.mean(times[key]["plain"]), statistics.median(times[key][VERIFY])
        (pick,) = chosen[key]
        if pick != aten and reading.faster(min_gain):
            picks.append(MeasuredPick(problem, pick, verify_ms, aten, plain_ms, plain_ms / verify_ms - 1, source))
        else:
            picks.append(MeasuredPick(problem, aten, plain_ms, aten, plain_ms, 0.0, source))
    return picks


def run_picks(runs, min_gain: float = MIN_GAIN) -> tuple[str, list[MeasuredPick]]:
    """(the GPU the runs measured on, their picks): `runs` are bench gemm output folders or
    results.jsonl files, pooled as `bench gemm-pool` pools them."""
    from kselect.training.bench.gemm_pooled import load

    rows, env = load(runs)
    device = env.get("device_name")
    if not device:
        raise ValueError(f"the bench runs {list(map(str, runs))} do not name their GPU (summary.json's environment)")
    return device, bench_picks(rows, source=", ".join(map(str, runs)), min_gain=min_gain)
