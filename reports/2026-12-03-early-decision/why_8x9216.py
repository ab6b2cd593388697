"""Why kselect kept cuBLAS alone on 8x9216x3072 (section 4): the shipped model's scores.

    python reports/2026-12-03-early-decision/why_8x9216.py
"""
import numpy as np
import pandas as pd

from kselect.kernels import Candidate, Problem
from kselect.kernels.triton.space import triton_space
from kselect.models import shipped_model_path
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.decide.policy import choose_kept

model = CostModel.load(shipped_model_path("h200-bf16.json"))
ranker = CostModelRanker(model, model.fingerprint)
problem = Problem(8, 9216, 3072, "bf16", "nt")
cands = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
scores = ranker.rank(problem, cands)
order = list(np.argsort(scores))
keys = [c.key for c in cands]
print(f"{problem.key}: {len(cands)} candidates; top 3:")
for i in order[:3]:
    print(f"  {scores[i]:8.3f} {keys[i]}")
for who, key in (("EXHAUSTIVE's pick", "triton:mm:BK256-BM16-BN64-G8-S3-W2"),
                 ("DEFAULT's pick", "triton:mm:BK128-BM16-BN32-G8-S5-W2")):
    i = keys.index(key)
    print(f"  {who} {key}: rank {order.index(i) + 1}, score {scores[i]:.3f}")
kept, why = choose_kept(cands, scores, "verify", 4, True, False, [], adaptive=True, min_k=1)
print("verify keeps", [keys[i] for i in kept], f"({why})")

df = pd.read_parquet("data/h200-bf16/measurements.parquet")
ok = df[(df.status == "ok") & (df.M <= 16)]
best = ok.groupby("problem_key").time_ms.min()
aten = ok[ok.backend == "aten"].groupby("problem_key").time_ms.min()
ratio = (aten / best).dropna()
print(f"training data, M <= 16: cuBLAS measured best on {int((ratio <= 1.0001).sum())} of {len(ratio)} problems; "
      f"{problem.key} in the data: {problem.key in set(df.problem_key)}")
