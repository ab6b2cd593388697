"""Compile-aware predict, held out: keep cuBLAS unless a Triton kernel is predicted to beat it
by a margin, since every Triton GEMM predict picks is compiled (~0.5 s on the H200,
reports/2026-12-03-predict-decision-cost-exhaustive-end-to-end) while ATen compiles nothing.

For each shape (leave-one-family-out, as the other reports here), with the shipped rank:ndcg
model's per-shape selection cost and a reg:log model's plain predictions (log time over the
shape's best; same hyper-parameters) for every row:
- "ndcg top-1": today's predict;
- "reg:log top-1";
- "ATen always";
- "reg:log margin m": the best non-ATen row by reg:log if it is predicted >= m faster than
  ATen's reg:log prediction, else ATen;
- "ndcg top-1, reg:log margin m": ndcg's pick if it is ATen; else it only if reg:log predicts it
  >= m faster than ATen;
- "ndcg top-1, ndcg gap to ATen >= g sd": no second model -- ndcg's pick only if its score
  beats ATen's by g standard deviations of the shape's scores, on exactly the scores the
  selector has (selection_cost, cascade included; policy.choose_kept's `min_gain_sd`).
Reported: geomean % of the measured best, share of GEMMs that pick a template (= compile one),
geomean measured speed-up over ATen of the pick, on all shapes with an ATen row and on the 106
oracle shapes.

Run from the repository root:
    python reports/2026-12-05-cost-model-h200-bf16/compile_aware_eval.py OUT.json
(about 2 min on the 2-core dev machine; wrote compile-aware.json beside this file).
"""
import json
import math
import sys

import numpy as np

from kselect.selector.model.features import TEMPLATE_CLASSES, featurize_frame, infeasible
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.train import MAX_ROWS_PER_SHAPE, ModelRanker

MARGINS = (0.0, 0.02, 0.05, 0.1, 0.2)

df, fp = load_data("data/h200-bf16")
shapes = ShapeSet.from_frame(df)
X = featurize_frame(shapes.rows, fp)
params = CostModel.load("models/h200-bf16.json").get_params()
aten = shapes.tmpl == TEMPLATE_CLASSES.index("aten")
cannot_run = infeasible(X)
ends = np.r_[shapes.starts[1:], len(X)]


def held_out(objective, raw=None):
    p = {**params, "objective": objective}
    return held_out_costs(shapes, X, lambda: ModelRanker(p, MAX_ROWS_PER_SHAPE), "family", 5,
                          progress=print, raw_out=raw)


ndcg = held_out("rank:ndcg")
reglog_raw = np.full(len(X), np.nan)
held_out("reg:log", raw=reglog_raw)


def pick(s, a, b, policy, margin):
    """Row index (absolute) the policy picks for shape s (rows a..b), or None without ATen."""
    rows = np.arange(a, b)
    at = rows[aten[a:b]]
    if len(at) == 0:
        return None
    at = at[0]
    ok = rows[~cannot_run[a:b]]
    if policy == "aten":
        return at
    if policy == "ndcg":
        c = ndcg[ok]
        return ok[np.nanargmin(np.where(np.isfinite(c), c, np.inf))]
    r = reglog_raw
    if policy == "reglog":
        return ok[np.nanargmin(r[ok])]
    if policy == "reglog_margin":
        tmpl = ok[~aten[ok]]
        if len(tmpl) == 0:
            return at
        j = tmpl[np.nanargmin(r[tmpl])]
        return j if r[j] <= r[at] - math.log1p(margin) else at
    if policy == "ndcg_margin":
        j = pick(s, a, b, "ndcg", 0)
        return j if aten[j] or r[j] <= r[at] - math.log1p(margin) else at
    if policy == "ndcg_gap":  # no second model: the selector's own scores (cascade included)
        j = pick(s, a, b, "ndcg", 0)
        c = ndcg[ok][np.isfinite(ndcg[ok])]
        sd = float(np.std(c)) if len(c) > 1 else 0.0
        return j if aten[j] or ndcg[at] - ndcg[j] >= margin * sd else at
    raise ValueError(policy)


def score(policy, margin=0.0) -> dict:
    pct, templ, gain, oracle = [], [], [], []
    for s, (a, b) in enumerate(zip(shapes.starts, ends)):
        j = pick(s, a, b, policy, margin)
        if j is None or not np.isfinite(shapes.aten_time[s]):
            continue
        t = shapes.time[j]
        pct.append(shapes.best[s] / t if np.isfinite(t) else 0.0)
        templ.append(not aten[j])
        gain.append(shapes.aten_time[s] / t if np.isfinite(t) else 0.0)
        oracle.append(bool(shapes.oracle[s]))
    pct, templ, gain, oracle = map(np.array, (pct, templ, gain, oracle))
    out = {}
    for scope, m in (("all", np.ones(len(pct), bool)), ("oracle", oracle)):
        g = lambda x: float(np.exp(np.log(np.maximum(x[m], 1e-9)).mean()))  # noqa: E731
        out[scope] = {"shapes": int(m.sum()), "pct_of_best_geomean": g(pct),
                      "template_share": float(templ[m].mean()), "speedup_over_aten_geomean": g(gain),
                      "worse_than_aten_share": float((gain[m] < 0.999).mean())}
    return out


res = {"ndcg top-1 (predict today)": score("ndcg"), "reg:log top-1": score("reglog"),
       "ATen always": score("aten")}
for m in MARGINS:
    res[f"reg:log margin {m:g}"] = score("reglog_margin", m)
    res[f"ndcg top-1, reg:log margin {m:g}"] = score("ndcg_margin", m)
for g in (0.1, 0.25, 0.5, 0.75, 1.0, 2.0):
    res[f"ndcg top-1, ndcg gap to ATen >= {g:g} sd"] = score("ndcg_gap", g)
for k, v in res.items():
    print(f"{k:34s}", {sc: {kk: round(vv, 4) for kk, vv in d.items()} for sc, d in v.items()}, flush=True)
json.dump(res, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/compile_aware.json", "w"), indent=1)
