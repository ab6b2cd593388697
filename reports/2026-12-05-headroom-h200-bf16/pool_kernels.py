"""Kernel and tuning time of kselect against plain torch.compile and stock DEFAULT, pooled over
every committed 30-shape H200 bench-gemm run (all made with the rank:ndcg models that predate
the reg:aten model). Per shape and variant the median kernel time over the runs that measured
it; geomean ratios over the shapes where a GEMM decision is made (M >= 2, N and K multiples of 8)
and, apart, over the decision-free ones; tuning as a ratio of totals (compile time minus plain's
for the same shape and run, summed over shapes and runs).

    python reports/2026-12-05-headroom-h200-bf16/pool_kernels.py > reports/2026-12-05-headroom-h200-bf16/pooled-bench.json
"""
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

RUNS = ["reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/callA/a/bench", "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call3/z/gemm30",
        "reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/callB/b/default30", "reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/callB/b/predict30",
        "reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/callC/c/default30", "reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call2/q/predict30"]


def main(root: Path) -> dict:
    kernel = defaultdict(lambda: defaultdict(list))   # variant -> problem -> [ms]
    dims = {}
    tuning = defaultdict(float)
    tuning_shapes = defaultdict(int)
    for run in RUNS:
        rows = [json.loads(line) for line in open(root / run / "results.jsonl")]
        plain = {r["problem"]: r["compile_s"] for r in rows if r["variant"] == "plain"}
        for r in rows:
            if r.get("kernel_ms"):
                kernel[r["variant"]][r["problem"]].append(r["kernel_ms"])
            dims[r["problem"]] = (r["M"], r["N"], r["K"])
            if r["problem"] in plain and r["variant"] != "plain":
                tuning[r["variant"]] += r["compile_s"] - plain[r["problem"]]
                tuning_shapes[r["variant"]] += 1
    med = {v: {p: statistics.median(ts) for p, ts in d.items()} for v, d in kernel.items()}

    def free(p):
        M, N, K = dims[p]
        return M == 1 or N % 8 or K % 8

    out = {"runs": RUNS, "runs_per_variant": {v: max(len(ts) for ts in d.values()) for v, d in kernel.items()},
           "kernel_geomean": {}}
    pairs = [("kselect-verify", "plain"), ("kselect-verify", "default"), ("kselect-predict", "plain"),
             ("kselect-predict", "default"), ("plain", "default")]
    for a, b in pairs:
        for part, keep in (("decided", lambda p: not free(p)), ("decision_free", free)):
            common = [p for p in med[a] if p in med[b] and keep(p)]
            if common:
                g = math.exp(sum(math.log(med[a][p] / med[b][p]) for p in common) / len(common))
                out["kernel_geomean"][f"{a}/{b} {part}"] = {"shapes": len(common), "ratio": round(g, 4)}
    out["tuning_ratio_of_totals"] = {f"{v}/default": round(tuning[v] / tuning["default"], 4)
                                     for v in ("kselect-verify", "kselect-predict") if tuning["default"]}
    out["tuning_totals_s"] = {v: round(t, 1) for v, t in tuning.items()}
    out["tuning_shape_runs"] = dict(tuning_shapes)
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")), indent=1))
