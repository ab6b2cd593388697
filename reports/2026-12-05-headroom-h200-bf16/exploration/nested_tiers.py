"""Nested choice of verify's tiers: rule fixed a priori, applied inside each outer training fold."""
import json, numpy as np, itertools
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs, folds
from kselect.training.learn.headroom import (
    verify_with_nearest,
    split_stats,
    shape_table,
    best_template_gaps,
    capture_stats,
)
from kselect.training.learn.nearest_table import NearestTemplatesRanker
from kselect.training.learn.train import ModelRanker
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.gap_policy import templates_to_time
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
X = np.load("/tmp/hrw/X.npy"); cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
params = CostModel.load("models/h200-bf16.json").get_params()
B = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30]
GRID = [((b4, 4), (b2, 2), (0.30, 1)) for b4 in B for b2 in B if b2 >= b4]
TOL = 0.01
def frontier(sh, c, near):
    tab = shape_table(sh); real = ~tab["decision_free"]
    _, gap = best_template_gaps(sh, c)
    out = []
    for tiers in GRID:
        n = np.array([templates_to_time(g, tiers) for g in gap])
        t, timed = verify_with_nearest(sh, c, near, n)
        out.append((capture_stats(sh.aten_time[real], sh.best[real], t[real])["capture"], timed[real].mean(), tiers))
    return out
def rule(fr):
    top = max(f[0] for f in fr)
    ok = [f for f in fr if f[0] >= top - TOL]
    return min(ok, key=lambda f: (f[1], -f[0]))[2]
outer = folds(shapes, "family", 5)
chosen = {}
n_outer = np.zeros(shapes.n_shapes, int)
for name, test in outer:
    sub = shapes.subset(~test); Xs = X[~test[shapes.sid]]
    c_in = held_out_costs(sub, Xs, lambda: ModelRanker(params, 150), "family", 5)
    n_in = held_out_costs(sub, Xs, NearestTemplatesRanker, "family", 5)
    np.save(f"/tmp/hrw/inner_cm_{name}.npy", c_in); np.save(f"/tmp/hrw/inner_nt_{name}.npy", n_in)
    tiers = rule(frontier(sub, c_in, n_in)); chosen[name] = tiers
    _, gap = best_template_gaps(shapes, cm)
    for s in np.flatnonzero(test):
        n_outer[s] = templates_to_time(gap[s], tiers)
    print(name, tiers, flush=True)
tab = shape_table(shapes); real = ~tab["decision_free"]
t, timed = verify_with_nearest(shapes, cm, nt, n_outer)
st = split_stats(shapes, t, tab)
print("nested", st["realistic"], timed[real].mean())
full = rule(frontier(shapes, cm, nt)); print("rule on the full CV:", full)
json.dump({"tol": TOL, "chosen": {k: v for k, v in chosen.items()}, "nested_capture": st["realistic"]["capture"],
           "nested_templates": float(timed[real].mean()), "full": full}, open("/tmp/hrw/nested.json", "w"), indent=1)
