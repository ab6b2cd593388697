"""Per shape measured over the whole EXHAUSTIVE space (data/h200-bf16, space == "exhaustive"):
how much faster the best Triton candidate is than the best of Inductor's DEFAULT space.

    python reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/dev-cpu/exhaustive_vs_default.py
"""
import pandas as pd

from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space

df = pd.read_parquet("data/h200-bf16/measurements.parquet")
df = df[(df.status == "ok") & (df.space == "exhaustive")]
rows = []
for (M, N, K, layout), d in df.groupby(["M", "N", "K", "layout"]):
    default_keys = {c.key for c in triton_space(Problem(int(M), int(N), int(K), "bf16", layout), "default")}
    triton = d[d.backend != "aten"]
    in_default = triton[triton.candidate_key.isin(default_keys)]
    if triton.empty or in_default.empty:
        continue
    best = triton.time_ms.min()
    rows.append({"M": M, "N": N, "K": K, "layout": layout, "triton_measured": len(triton),
                 "of_them_default": len(in_default), "best_default_over_best": in_default.time_ms.min() / best,
                 "aten_over_best": d[d.backend == "aten"].time_ms.min() / best})
r = pd.DataFrame(rows).sort_values("best_default_over_best")
print(f"{len(r)} shapes; best DEFAULT tile over best EXHAUSTIVE tile: median "
      f"{r.best_default_over_best.median():.3f}, max {r.best_default_over_best.max():.3f}")
print(r.to_string(index=False, float_format="%.3f"))
