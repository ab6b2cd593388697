"""The 30-shape `kselect bench gemm` (plain, verify, predict, DEFAULT) of
callA of reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels and of this report's call3, side by side: per-run geomean kernel-time
ratios (each variant against DEFAULT and against plain cuBLAS), over all 30 shapes and over the
26 whose GEMM kselect decided (the four M = 1 shapes Inductor lowers without a GEMM choice: no
decision, 0 benchmarked in every variant), and the shapes where DEFAULT's pick was >= 3 % slower
or faster than cuBLAS. Run from the repo root with any python 3."""
import json
import math
from pathlib import Path

RUNS = {"s9 callA": "reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/callA/a/bench/results.jsonl",
        "s13 call3": "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call3/z/gemm30/results.jsonl"}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


for label, path in RUNS.items():
    ms: dict = {}
    decided = set()
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if r.get("kernel_ms"):
            ms.setdefault(r["problem"], {})[r["variant"]] = r["kernel_ms"]
        if r["variant"] == "kselect-predict" and r.get("decisions"):
            decided.add(r["problem"])
    full = {p: v for p, v in ms.items() if len(v) == 4}
    print(f"== {label}: {len(full)} shapes with all four variants, {len(decided)} decided by kselect")
    for a, b in (("kselect-verify", "default"), ("kselect-predict", "default"), ("plain", "default"),
                 ("kselect-verify", "plain"), ("kselect-predict", "plain"), ("default", "plain")):
        every = geomean([v[a] / v[b] for v in full.values()])
        gemm = geomean([v[a] / v[b] for p, v in full.items() if p in decided])
        print(f"  {a:16s}/{b:8s} geomean all {every:.4f}, decided {gemm:.4f}")
    slow = sorted((v["default"] / v["plain"], p) for p, v in full.items() if v["default"] / v["plain"] >= 1.03)
    fast = sorted((v["default"] / v["plain"], p) for p, v in full.items() if v["default"] / v["plain"] <= 1 / 1.03)
    print(f"  DEFAULT >= 3 % slower than cuBLAS on {len(slow)}: " + ", ".join(f"{p} {x:.2f}x" for x, p in slow))
    print(f"  DEFAULT >= 3 % faster than cuBLAS on {len(fast)}: " + ", ".join(f"{p} {x:.2f}x" for x, p in fast))
