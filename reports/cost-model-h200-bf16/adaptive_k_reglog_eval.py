"""Adaptive k with time-unit scores: a reg:log model (predicts log(time / shape's best)) trained
with the shipped hyper-parameters, held out by family; adaptive_k's log-time margin rule (keep
what is predicted within `margin` of #1) against fixed top-k, ATen safety net added.

Run from the repository root: python reports/cost-model-h200-bf16/adaptive_k_reglog_eval.py OUT.json
(about 1 min on the 2-core dev machine; wrote adaptive-k-reglog.json beside this file)."""
import sys
import math, numpy as np, json
from kselect.selector.features import TEMPLATE_CLASSES, featurize_frame
from kselect.selector.model import CostModel
from kselect.selector.policy import adaptive_k
from kselect.training.evaluate import ShapeSet, folds
from kselect.training.evaluate_cli import load_data
from kselect.training.train import MAX_ROWS_PER_SHAPE, ModelRanker
df, fp = load_data("data/h200-bf16")
shapes = ShapeSet.from_frame(df)
X = featurize_frame(shapes.rows, fp)
base = CostModel.load("models/h200-bf16.json").get_params()
costs = {}
for obj in ("reg:log",):
    params = {**base, "objective": obj}
    c = np.full(len(X), np.nan)
    for name, test in folds(shapes, "family", 5):
        tr = ~test[shapes.sid]
        r = ModelRanker(params, MAX_ROWS_PER_SHAPE).fit(shapes.subset(~test), X[tr])
        c[~tr] = r.cost(shapes.subset(test), X[~tr])
        print(obj, name, flush=True)
    costs[obj] = c
aten = shapes.tmpl == TEMPLATE_CLASSES.index("aten")
ends = np.r_[shapes.starts[1:], len(X)]
def evalrule(cost, rule):
    pct, kn = [], []
    for s, (a, b) in enumerate(zip(shapes.starts, ends)):
        c = cost[a:b]; fin = np.flatnonzero(np.isfinite(c)); order = fin[np.argsort(c[fin], kind="stable")]
        n = rule(c[order])
        kept = set(order[:max(n,1)].tolist()) | set(np.flatnonzero(aten[a:b]).tolist()[:1])
        t = shapes.time[a:b][sorted(kept)]
        pct.append(shapes.best[s]/t.min()); kn.append(len(kept))
    pct, kn = np.array(pct), np.array(kn); o = shapes.oracle
    g = lambda p: float(np.exp(np.log(np.maximum(p,1e-9)).mean()))
    return {"pct": round(g(pct),4), "bench": round(float(kn.mean()),2), "pct_oracle": round(g(pct[o]),4), "bench_oracle": round(float(kn[o].mean()),2)}
c = costs["reg:log"]
out = {}
for k in (1, 2, 4):
    out[f"reg:log fixed k={k}"] = evalrule(c, lambda s, k=k: k)
for m in (0.01, 0.02, 0.05, 0.1, 0.2):
    for cap in (2, 4):
        out[f"reg:log margin {m:g} cap {cap}"] = evalrule(c, lambda s, m=m, cap=cap: adaptive_k(s, cap, True, margin=m))
for k, v in out.items(): print(k, v)
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/reglog.json", "w"), indent=1)
