"""Held-out (family folds) % of oracle for cascade settings, ranking each shape on its own.

Run from the repository root: python reports/2026-12-05-cost-model-h200-bf16/cascade_eval.py OUT.json
(about 1 min on the 2-core dev machine; wrote cascade-per-shape.json beside this file)."""
import json, sys, time
import numpy as np
from kselect.selector.model.features import featurize_frame, infeasible
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.ranking_metrics import ShapeSet, evaluate_costs, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.train import ModelRanker, MAX_ROWS_PER_SHAPE

SETTINGS = {"all_trees": (0, 0), "c30_k192": (30, 192), "c20_k128": (20, 128), "c15_k128": (15, 128),
            "c15_k64": (15, 64), "c10_k64": (10, 64), "c10_k32": (10, 32), "c5_k64": (5, 64), "c5_k32": (5, 32), "c3_k64": (3, 64)}
df, fp = load_data("data/h200-bf16")
shapes = ShapeSet.from_frame(df)
X = featurize_frame(shapes.rows, fp)
model = CostModel.load("models/h200-bf16.json")
params = model.get_params()
out = {name: np.full(len(X), np.nan) for name in SETTINGS}

class Multi(ModelRanker):
    def cost(self, sub, Xs):
        m = self.model_
        res = {}
        sids = sub.sid
        for name, (first, keep) in SETTINGS.items():
            m.cascade_trees, m.cascade_keep = first, keep
            c = np.full(len(Xs), np.nan)
            for s in np.unique(sids):
                rows = np.flatnonzero(sids == s)
                c[rows] = m.selection_cost(Xs[rows])
            res[name] = c
        self.last = res
        return res["c30_k192"]

t0 = time.time()
rankers = []
def make():
    r = Multi(params, MAX_ROWS_PER_SHAPE); rankers.append(r); return r
# replicate held_out_costs but capture every setting
from kselect.training.learn.ranking_metrics import folds
for i, (name, test) in enumerate(folds(shapes, "family", 5)):
    train_rows = ~test[shapes.sid]
    r = make().fit(shapes.subset(~test), X[train_rows])
    r.cost(shapes.subset(test), X[~train_rows])
    for k, v in r.last.items():
        out[k][~train_rows] = v
    print("fold", i, name, round(time.time() - t0), "s", flush=True)
res = {}
for k, c in out.items():
    e = evaluate_costs(shapes, c)
    res[k] = {kk: e["all"]["pct_oracle_geomean"][kk] for kk in (1, 2, 4, 8)}
    res[k]["top1"] = e["all"]["top1"]
    o = e.get("oracle", {})
    res[k]["oracle"] = {kk: o["pct_oracle_geomean"][kk] for kk in (1, 2, 4, 8)} if o else None
    res[k]["oracle_top1"] = o.get("top1") if o else None
    print(k, res[k], flush=True)
json.dump(res, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cascade.json", "w"), indent=1)

# latency of each setting on one GEMM's whole space (2,401 candidates), same process, interleaved
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.features import featurize_candidates
model.set_threads(1)
p = Problem(4096, 4096, 4096)
Xc = featurize_candidates(p, [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive"), model.fingerprint)
times = {k: [] for k in SETTINGS}
for rep in range(60):
    for k, (first, keep) in SETTINGS.items():
        model.cascade_trees, model.cascade_keep = first, keep
        t = time.perf_counter(); model.selection_cost(Xc); times[k].append(time.perf_counter() - t)
lat = {k: round(1e3 * float(np.median(v)), 3) for k, v in times.items()}
print("selection_cost median ms (2,401 candidates):", lat)
res["latency_ms"] = lat
json.dump(res, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cascade.json", "w"), indent=1)
