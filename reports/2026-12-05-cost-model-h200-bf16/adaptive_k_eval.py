"""Verify mode's adaptive k, held out: how many candidates it benchmarks and how close the best
of them is to the measured best, for several `spread` values (policy.adaptive_k) and fixed k,
with the ATen safety net -- exactly the selector's policy on the selector's scores
(per-shape selection_cost, cascade included), leave-one-family-out. Then the same with
time-unit scores: a reg:log model (predicts log(time / shape's best)) with the shipped
hyper-parameters, whose gaps adaptive_k reads as time ratios (its `margin` rule).

Run from the repository root:
    python reports/2026-12-05-cost-model-h200-bf16/adaptive_k_eval.py OUT.json OUT_REGLOG.json
(about 2 min on the 2-core dev machine; wrote adaptive-k.json and adaptive-k-reglog.json
beside this file)."""
import json
import math
import sys

import numpy as np

from kselect.selector.model.features import TEMPLATE_CLASSES, featurize_frame
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.policy import adaptive_k
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.train import MAX_ROWS_PER_SHAPE, ModelRanker

# (label, cap, spread): the shipped rule was cap 4, spread 0.5; spread inf = always the cap
SETTINGS = [(f"cap 4, spread {s:g}", 4, s) for s in (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)] + \
    [(f"fixed k={k}", k, math.inf) for k in (1, 2, 3, 4, 6, 8)]

df, fp = load_data("data/h200-bf16")
shapes = ShapeSet.from_frame(df)
X = featurize_frame(shapes.rows, fp)
params = CostModel.load("models/h200-bf16.json").get_params()
aten = shapes.tmpl == TEMPLATE_CLASSES.index("aten")
ends = np.r_[shapes.starts[1:], len(X)]


def held_out(objective):
    """Per-row cost from models that never saw the row's model family (ranked per shape)."""
    p = {**params, "objective": objective}
    return held_out_costs(shapes, X, lambda: ModelRanker(p, MAX_ROWS_PER_SHAPE), "family", 5, progress=print)


def kept_quality(cost, rule) -> dict:
    """What verify measures per GEMM under `rule` (+ the ATen safety net) and how good its best is."""
    return kept_quality_of(cost, lambda scores, rows: slice(0, max(rule(scores), 1)))


def kept_quality_of(cost, select, on_kept=None) -> dict:
    """kept_quality for any selection: `select(sorted scores, their dataset rows)` gives the kept
    positions in that order (a count's rule keeps a prefix); `on_kept(kept rows)` sees each
    GEMM's ranked picks before the ATen safety net joins them."""
    pct, kept_n = [], []
    for s, (a, b) in enumerate(zip(shapes.starts, ends)):
        c = cost[a:b]
        fin = np.flatnonzero(np.isfinite(c))
        order = fin[np.argsort(c[fin], kind="stable")]
        picked = order[select(c[order], order + a)]
        if on_kept is not None:
            on_kept(picked + a)
        kept = set(picked.tolist()) | set(np.flatnonzero(aten[a:b]).tolist()[:1])
        t = shapes.time[a:b][sorted(kept)]
        pct.append(shapes.best[s] / t.min() if np.isfinite(t.min()) else 0.0)
        kept_n.append(len(kept))
    pct, kept_n = np.array(pct), np.array(kept_n)
    row = {}
    for scope, m in (("all", np.ones(len(pct), bool)), ("oracle", shapes.oracle)):
        p = np.maximum(pct[m], 1e-9)
        row[scope] = {"shapes": int(m.sum()), "pct_oracle_geomean": float(np.exp(np.log(p).mean())),
                      "share_within_1pct": float((pct[m] >= 0.99).mean()),
                      "benchmarked_mean": float(kept_n[m].mean()), "benchmarked_max": int(kept_n[m].max())}
    return row


def sweep(cost, rules, path):
    out = {}
    for key, rule in rules:
        out[key] = kept_quality(cost, rule)
        print(key, {sc: {k: round(v, 4) for k, v in d.items()} for sc, d in out[key].items()}, flush=True)
    json.dump(out, open(path, "w"), indent=1)


def local_spread(top_m, spread, cap=4):
    """A variant tried here: the scale is the spread of the best `top_m` scores only."""
    def rule(s):
        sd = float(np.std(s[:top_m])) if len(s) > 1 else 0.0
        return max(1, min(cap, int(np.sum(s - s[0] <= spread * sd + 1e-12))))
    return rule


def absolute_gap(gap, cap=4):
    return lambda s: max(1, min(cap, int(np.sum(s - s[0] <= gap + 1e-12))))


RULES = [(key, (lambda s, cap=cap, spread=spread: cap if spread == math.inf
                else adaptive_k(s, cap, False, spread=spread))) for key, cap, spread in SETTINGS]
RULES += [(f"cap 4, spread {sp:g} of the best {m} scores", local_spread(m, sp)) for m in (8, 64) for sp in (1.0, 2.0)]
RULES += [(f"cap 4, score gap <= {g:g}", absolute_gap(g)) for g in (0.2, 0.8)]
RULES += [(f"floor 2, cap {cap}, spread {sp:g}", lambda s, cap=cap, sp=sp: adaptive_k(s, cap, False, spread=sp, floor=2))
          for cap in (3, 4) for sp in (0.25, 0.5, 1.0)]

REGLOG_RULES = [(f"reg:log fixed k={k}", lambda s, k=k: k) for k in (1, 2, 4)]
REGLOG_RULES += [(f"reg:log margin {m:g} cap {cap}", lambda s, m=m, cap=cap: adaptive_k(s, cap, True, margin=m))
                 for m in (0.01, 0.02, 0.05, 0.1, 0.2) for cap in (2, 4)]

if __name__ == "__main__":   # importable: reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families_eval.py reuses it
    sweep(held_out("rank:ndcg"), RULES, sys.argv[1] if len(sys.argv) > 1 else "/tmp/adaptive_k.json")
    sweep(held_out("reg:log"), REGLOG_RULES, sys.argv[2] if len(sys.argv) > 2 else "/tmp/adaptive_k_reglog.json")
