import numpy as np, os
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import xgboost as xgb
from sklearn.metrics import roc_auc_score
from kselect.training.learn.ranking_metrics import folds
from kselect.training.learn.headroom import shape_table, template_order
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes()
X = np.load("/tmp/hr/X.npy")
tab = shape_table(shapes); real = ~tab["decision_free"]
room = np.log(shapes.aten_time/shapes.best); y = (room >= np.log(1.03)).astype(float)
arow = np.flatnonzero(shapes.tmpl == 0); S = np.zeros((shapes.n_shapes, 25), np.float32); S[shapes.sid[arow]] = X[arow, :25]
c = np.load("/tmp/hr/cost_reg_wt3_nf_d5.npy")
aten_c = np.full(shapes.n_shapes, np.nan); aten_c[shapes.sid[arow]] = c[arow]
order, rank = template_order(shapes, c); gap = np.full(shapes.n_shapes, np.inf)
for r in range(3):
    top = order[rank == r]; g = np.full(shapes.n_shapes, np.inf); g[shapes.sid[top]] = c[top] - aten_c[shapes.sid[top]]
    if r == 0: gap = g
for use_gap in (False, True):
    p = np.zeros(shapes.n_shapes)
    F = np.c_[S, gap] if use_gap else S
    for name, test in folds(shapes, "family"):
        tr = ~test & real
        d = xgb.DMatrix(F[tr], label=y[tr])
        b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "eta": 0.1, "subsample": 0.8, "nthread": 2, "verbosity": 0, "min_child_weight": 2}, d, 150)
        p[test] = b.predict(xgb.DMatrix(F[test]))
    print("classifier", "with gap" if use_gap else "problem only", "AUC", round(roc_auc_score(y[real], p[real]), 3))
    np.save(f"/tmp/hr/clf_{int(use_gap)}.npy", p)
print("gap alone AUC", round(roc_auc_score(y[real], -gap[real]), 3))
