"""What verify's lm_head measurements on the H200 say of the tile the compile price passes
over (BK256 BN128 S3 with 2 warps): its time relative to each measured set's winner, in every
verify process of the reports/2026-12-04-memory-release-warm-up and
reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait one-layer decode and 8-layer prefill
runs (8x128256x4096 nt).

Run from the repository root (seconds):
    .venv/bin/python reports/2026-12-05-compile-cost-sm90/lm_head_measured.py reports/2026-12-05-compile-cost-sm90/lm-head-measured.json
"""
import json
import sys

import numpy as np

SOURCES = ("reports/2026-12-04-memory-release-warm-up/call3/d/prefill8target/results.json",
           "reports/2026-12-04-memory-release-warm-up/call4/d/decode1/results.json",
           "reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/call1/d/decode1/results.json",
           "reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/call2/d/prefill8target/results.json")
SLOW = "triton:mm:BK256-BM16-BN128-G8-S3-W2"

sets = []
for path in SOURCES:
    for run in json.load(open(path))["runs"]:
        if not run.get("variant", "").startswith("kselect-verify") or run.get("status") != "ok":
            continue
        for m in run["kselect"].get("measurements", []):
            if m["problem"] == "mm:8x128256x4096:bf16:nt":
                best = min(m["ms"].values())
                ranked = sorted(m["ms"], key=m["ms"].get)
                sets.append({"source": path, "winner": ranked[0], "slow_tile_rank": ranked.index(SLOW) + 1,
                             "vs_winner": {k: round(v / best, 4) for k, v in m["ms"].items()}})
ratios = [s["vs_winner"][SLOW] for s in sets]
out = {"sets": len(sets), "winners": sorted({s["winner"] for s in sets}),
       "slow_tile_won": sum(s["winner"] == SLOW for s in sets),
       "slow_tile_vs_winner": {"min": min(ratios), "median": float(np.median(ratios)), "max": max(ratios)},
       "slow_tile_rank": sorted(s["slow_tile_rank"] for s in sets), "detail": sets}
print({k: v for k, v in out.items() if k != "detail"})
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/lm_head_measured.json", "w"), indent=1)
