"""What the GPU did under each variant of a pooled setup: the replays' kernel sequences
compared position by position, and the recorded GPU state (memory, clocks, temperature,
power) as medians over processes."""

from __future__ import annotations

import statistics

from kselect.training.bench.kernel_time import sequence_differences

# (variant, baseline) whose replays' kernel sequences are compared position by position
SEQUENCE_PAIRS = (("kselect-verify", "kselect-predict"), ("kselect-verify", "default"))


def median_sequence(runs: list[dict]) -> tuple[list, int] | None:
    """The replays' kernel sequence (graph_kernel_time.sequence) as the median per position over
    the processes that ran the first one's kernels in its order, and how many did; None
    without any. Why: one process's per-kernel times carry its clock; medians over processes
    leave what the variant's graph does."""
    seqs = [s for s in ((r.get("graph_kernel_time") or {}).get("sequence") for r in runs) if s]
    if not seqs:
        return None
    names = [name for name, _ in seqs[0]]
    seqs = [s for s in seqs if [name for name, _ in s] == names]
    return [[n, statistics.median(s[i][1] for s in seqs)] for i, n in enumerate(names)], len(seqs)


def sequence_gaps(ok: list[dict], combined: list[dict]) -> list[dict]:
    """For each SEQUENCE_PAIRS pair that both have sequences: kernel_time.sequence_differences
    of their median sequences, beside the difference of their GPU-only step medians (the
    `combined` rows') -- how much of a replay gap sits in kernels, and where (before, at or
    after the swapped GEMM)."""
    gpu_ms = {row["variant"]: row.get("graph_step_ms") for row in combined}
    out = []
    for variant, baseline in SEQUENCE_PAIRS:
        a = median_sequence([r for r in ok if r["variant"] == variant])
        b = median_sequence([r for r in ok if r["variant"] == baseline])
        if a is None or b is None:
            continue
        mine, theirs = gpu_ms.get(variant), gpu_ms.get(baseline)
        step_us = None if mine is None or theirs is None else (mine - theirs) * 1e3
        diff = sequence_differences(a[0], b[0], top=3)
        out.append(
            {"variant": variant, "baseline": baseline, "processes": [a[1], b[1]], "gpu_step_diff_us": step_us, **diff}
        )
    return out


STATE_FIELDS = ("reserved_gb", "sm_clock_mhz", "temperature_c", "power_mw", "energy_mj_per_step")
# energy per step counts only where it came from the counter's moves (gpu_state.counter_power);
# the entry-to-exit joules of reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode are off by up to one counter step (~10 %)
ENERGY_NEEDS = "counter_power_mw"


def device_state_medians(runs: list[dict]) -> dict:
    """{moment: {field: median over the processes that recorded it}} of the GPU state `bench
    e2e` records before the timed steps, while and after the graph replays (training/bench/gpu_state.py):
    whether a same-kernel step gap goes with memory held, clocks or temperature."""
    out: dict = {}
    for r in runs:
        for moment, state in (r.get("device_state") or {}).items():
            for field in STATE_FIELDS:
                if field == "energy_mj_per_step" and (state or {}).get(ENERGY_NEEDS) is None:
                    continue
                if (state or {}).get(field) is not None:
                    out.setdefault(moment, {}).setdefault(field, []).append(state[field])
    return {m: {f: statistics.median(v) for f, v in fields.items()} for m, fields in out.items()}
