"""exploration: held-out (family LOFO) capture of several recipes; costs cached."""
import numpy as np, time, sys, json, os
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import xgboost as xgb
from kselect.training.learn.ranking_metrics import folds
from kselect.training.learn.headroom import shape_table, templates_plus_aten, capture_stats, split_stats, pick_times
from kselect.training.learn.train import sample_rows, relevance
from kselect.selector.model.features import FEATURE_NAMES, TEMPLATE_CLASSES
from kselect.selector.model import features as _f
infeasible = lambda X: X[:, _f.FEATURE_NAMES.index("smem_over_limit")] > 0
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes()
X = np.load(os.environ.get("HR_X", "/tmp/hr/X.npy"))
tab = shape_table(shapes); real = ~tab["decision_free"]
aten_row = shapes.tmpl == 0
gap = np.log(shapes.time / shapes.aten_time[shapes.sid])   # inf for failures

def fit_predict(recipe, train_shapes_mask, test_rows):
    tr_rows = train_shapes_mask[shapes.sid]
    idx_all = np.flatnonzero(tr_rows & ~infeasible(X))
    rng = np.random.default_rng(recipe.get("seed", 0))
    g = gap[idx_all]
    near = g <= np.log(1.3) 
    # sample: all rows within 1.3x of ATen, plus up to max_rows of the rest per shape
    keep = near | (rng.random(len(idx_all)) < recipe.get("far_frac", 0.3))
    if recipe.get("drop_free"): keep &= real[shapes.sid[idx_all]]
    idx = idx_all[keep]
    lo, hi = recipe.get("clip", (-0.6, 0.3))
    obj = recipe["obj"]
    if obj == "reg":
        y = np.clip(np.where(np.isfinite(gap[idx]), gap[idx], hi), lo, hi)
        w = None
        if recipe.get("wt"):
            room = np.log(shapes.aten_time/shapes.best)[shapes.sid[idx]]
            w = 1.0 + recipe["wt"] * room / 0.05
        d = xgb.DMatrix(X[idx], label=y, weight=w)
        params = {"objective": "reg:squarederror", "tree_method": "hist", "max_depth": recipe.get("depth", 6),
                  "eta": recipe.get("eta", 0.1), "min_child_weight": 2, "subsample": recipe.get("sub", 0.8), "colsample_bytree": recipe.get("col", 0.8),
                  "nthread": 2, "seed": recipe.get("seed", 0), "verbosity": 0}
        if recipe.get("mono"): params["monotone_constraints"] = "(" + ",".join(str(recipe["mono"].get(n, 0)) for n in _f.FEATURE_NAMES) + ")"
        b = xgb.train(params, d, recipe.get("trees", 150))
        return b.inplace_predict(X[test_rows])
    if obj == "rank_aten":
        o = np.argsort(shapes.sid[idx], kind="stable"); idx = idx[o]
        step = recipe.get("step", 1.01)
        y = np.clip(np.floor(-np.where(np.isfinite(gap[idx]), gap[idx], 9) / np.log(step)) + 1, 0, 31)
        if recipe.get("below"):  # graded below ATen too
            y = np.clip(np.floor((np.log(2.0) - np.where(np.isfinite(gap[idx]), gap[idx], 9)) / np.log(1.03)), 0, 31)
        d = xgb.DMatrix(X[idx], label=y, qid=shapes.sid[idx])
        params = {"objective": "rank:ndcg", "tree_method": "hist", "max_depth": recipe.get("depth", 6), "eta": 0.1,
                  "min_child_weight": 2, "subsample": 0.8, "colsample_bytree": 0.8, "nthread": 2, "seed": 0,
                  "verbosity": 0, "ndcg_exp_gain": False, "lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 32}
        b = xgb.train(params, d, recipe.get("trees", 150))
        return -b.inplace_predict(X[test_rows])
    raise ValueError(obj)

def heldout(recipe):
    cost = np.full(len(X), np.nan)
    for name, test in folds(shapes, "family"):
        rows = np.flatnonzero(test[shapes.sid])
        cost[rows] = fit_predict(recipe, ~test, rows)
    return np.where(infeasible(X), np.inf, cost)

def report(name, cost):
    out = {}
    for k in (1, 2, 4):
        t = templates_plus_aten(shapes, cost, k)
        out[k] = split_stats(shapes, t, tab)["realistic"]["capture"]
    print(name, " ".join(f"k{k}={v:.3f}" for k, v in out.items()), flush=True)
    return out

if __name__ == "__main__":
    recipes = json.loads(sys.argv[1])
    for name, r in recipes.items():
        t = time.time()
        c = heldout(r)
        np.save(f"/tmp/hr/cost_{name}.npy", c)
        report(name, c); print("  ", round(time.time()-t), "s", flush=True)
