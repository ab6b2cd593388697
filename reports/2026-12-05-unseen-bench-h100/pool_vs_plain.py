"""Kernel time of verify, predict and stock DEFAULT against plain torch.compile on the unseen
set, read by the rules fixed before the calls (reports/device/history.md, "Evening of 2026-12-05"):
plain ran in two processes (call A and call B, or call C1 for the shapes B did not reach), so
a GEMM's noise is max/min of its two plain times; each variant is compared with the mean of
plain's two; a ratio inside the GEMM's noise is a tie.

    python reports/2026-12-05-unseen-bench-h100/pool_vs_plain.py > reports/2026-12-05-unseen-bench-h100/vs-plain.json
"""

import json
import statistics
from collections import defaultdict
from math import exp, log
from pathlib import Path

HERE = Path(__file__).resolve().parent
times = defaultdict(lambda: defaultdict(list))  # variant -> problem -> kernel ms per process
tuning = defaultdict(lambda: defaultdict(list))
for call in ("callA", "callB", "callC1", "callC2"):
    for line in open(HERE / call / "results.jsonl"):
        r = json.loads(line)
        if r.get("kernel_ms") is None or not r.get("correct", True):
            continue
        times[r["variant"]][r["problem"]].append(r["kernel_ms"])
        tuning[r["variant"]][r["problem"]].append(r["compile_s"])

plain = {p: v for p, v in times["plain"].items() if len(v) >= 2}
noise = {p: max(v) / min(v) for p, v in plain.items()}
plain_mean = {p: statistics.fmean(v) for p, v in plain.items()}


def compare(variant: str) -> dict:
    shapes = sorted(set(plain_mean) & set(times[variant]))
    ratios = {p: plain_mean[p] / statistics.fmean(times[variant][p]) for p in shapes}  # > 1: faster than plain
    slower = {p: r for p, r in ratios.items() if 1 / r > noise[p]}
    faster = {p: r for p, r in ratios.items() if r > noise[p]}
    return {
        "shapes": len(shapes),
        "processes": sorted({len(times[variant][p]) for p in shapes}),
        "speedup_geomean_vs_plain": exp(statistics.fmean(log(r) for r in ratios.values())),
        "faster_beyond_noise": len(faster),
        "slower_beyond_noise": {p: round(1 / r, 4) for p, r in sorted(slower.items())},
        "ties": len(shapes) - len(faster) - len(slower),
        "largest_speedups": dict(sorted(((p, round(r, 4)) for p, r in ratios.items()), key=lambda x: -x[1])[:8]),
        "worst": dict(sorted(((p, round(r, 4)) for p, r in ratios.items()), key=lambda x: x[1])[:5]),
    }


out = {
    "card": (HERE / "card.txt").read_text().strip(),
    "plain_noise": {
        "shapes": len(noise),
        "median_max_over_min": statistics.median(noise.values()),
        "p90_max_over_min": sorted(noise.values())[int(0.9 * len(noise))],
    },
    "vs_plain": {v: compare(v) for v in ("kselect-verify", "kselect-predict", "default")},
}
default_shapes = set(times["default"])
total = {v: sum(statistics.fmean(tuning[v][p]) - statistics.fmean(tuning["plain"][p]) for p in default_shapes)
         for v in ("kselect-verify", "kselect-predict", "default")}
out["tuning_total_s_on_default_shapes"] = {v: round(t, 2) for v, t in total.items()}
out["tuning_ratio_of_totals_vs_default"] = {v: round(total[v] / total["default"], 4) for v in ("kselect-verify", "kselect-predict")}
print(json.dumps(out, indent=1))
