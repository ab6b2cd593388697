"""What the price costs: the compile-cost model's size, load time and cross-validated error for
a few tree counts (why the shipped one is small: verify loads it once per process, inside the
compile), and what pricing adds to verify's decision (`choose_kept` with the shipped models,
priced and unpriced, on lm_head and on two GEMMs that keep one ranked candidate).

Run from the repository root on an otherwise idle machine (~1 min on the 2-core dev machine):
    .venv/bin/python reports/2026-12-05-compile-cost-sm90/price_costs.py reports/2026-12-05-compile-cost-sm90/price-costs.json
"""
import json
import os
import sys
import tempfile
import time

import numpy as np
from sklearn.model_selection import KFold

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.compile_time_model import CompileCostModel, compile_features, shipped_compile_cost
from kselect.selector.model.discovery import load_shipped
from kselect.selector.model.compile_price import COMPILE_BUDGET, CompilePrice
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.decide.policy import choose_kept
from kselect.training.compile_times.fit import cv_metrics, load_compile_times

out = {"models": [], "decisions": []}
df = load_compile_times("data/triton-compile-sm90")
X, y = compile_features(df.to_dict("records")), df.cpu_ms.to_numpy()
for params in ({"n_estimators": 400, "max_depth": 6, "learning_rate": 0.05},
               {"n_estimators": 150, "max_depth": 5, "learning_rate": 0.1},
               {"n_estimators": 100, "max_depth": 6, "learning_rate": 0.15},
               {"n_estimators": 80, "max_depth": 5, "learning_rate": 0.2}):
    pred = np.empty(len(y))
    for train, test in KFold(5, shuffle=True, random_state=0).split(X):
        pred[test] = CompileCostModel(**params).fit(X[train], y[train]).predict_ms(X[test])
    path = os.path.join(tempfile.mkdtemp(), "m.json")
    CompileCostModel(**params).fit(X, y).save(path, {"cpu_ms_quantiles": {"50": float(np.median(y))}})
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        CompileCostModel.load(path)
        loads.append((time.perf_counter() - t0) * 1e3)
    cv = cv_metrics(y, pred)
    out["models"].append({**params, "median_abs_pct_err": round(cv["median_abs_pct_err"], 2),
                          "spearman": round(cv["spearman"], 4), "kb": os.path.getsize(path) // 1024,
                          "load_ms_median": round(float(np.median(loads)), 1)})
    print(out["models"][-1], flush=True)

compile_model = shipped_compile_cost("sm_90")
ranker = CostModelRanker(load_shipped("h200-bf16.json"), None)
for problem in (Problem(8, 128256, 4096, "bf16", "nt"), Problem(8, 4096, 4096, "bf16", "nt"),
                Problem(8192, 14336, 4096, "bf16", "nt")):
    cands = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    scores = ranker.rank(problem, cands)
    row = {"problem": problem.key}
    for priced in (False, True):
        times = []
        for _ in range(30):
            price = CompilePrice(lambda idx: compile_model.predict_for(problem, [cands[i] for i in idx]),
                                 compile_model.typical_ms, COMPILE_BUDGET) if priced else None
            t0 = time.perf_counter()
            kept, _ = choose_kept(cands, scores, "verify", 4, True, False, compile_price=price)
            times.append((time.perf_counter() - t0) * 1e3)
        row["priced_ms" if priced else "unpriced_ms"] = round(float(np.median(times)), 3)
        row["kept_priced" if priced else "kept_unpriced"] = len(kept)
    out["decisions"].append(row)
    print(row, flush=True)
one = [Candidate.make("aten", "mm")] + triton_space(Problem(8, 128256, 4096, "bf16", "nt"), "exhaustive")
times = []
for _ in range(100):
    t0 = time.perf_counter()
    compile_model.predict_for(Problem(8, 128256, 4096, "bf16", "nt"), one[1:2])
    times.append((time.perf_counter() - t0) * 1e3)
out["one_prediction_ms_median"] = round(float(np.median(times)), 3)
print("one prediction", out["one_prediction_ms_median"], "ms")
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/price_costs.json", "w"), indent=1)
