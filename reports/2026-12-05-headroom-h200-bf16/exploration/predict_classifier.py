"""predict gated by a per-shape classifier 'a template beats ATen by >= 3 %', fitted and
thresholded inside the training folds on their inner held-out scores."""
import numpy as np
from sklearn.linear_model import LogisticRegression
from xgboost import XGBClassifier
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, folds
from kselect.training.learn.headroom import shape_table, best_template_gaps, pick_times, capture_stats, template_order
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
def feats(sh, c, near):
    first = sh.rows.iloc[sh.starts]
    o, r = template_order(sh, c)
    g = np.full((sh.n_shapes, 3), 0.3)
    for j in range(3):
        sel = o[r == j]; g[sh.sid[sel], j] = np.minimum(np.asarray(c)[sel], 0.3)
    o2, r2 = template_order(sh, np.where(np.isfinite(near), near, np.inf))
    lk = np.full(sh.n_shapes, 0.3)   # the model's predicted gap of the lookup's first template
    sel = o2[(r2 == 0) & np.isfinite(near[o2])]; lk[sh.sid[sel]] = np.minimum(np.asarray(c)[sel], 0.3)
    mnk = np.log2(first[["M", "N", "K"]].to_numpy(float))
    return np.c_[g, lk, mnk]
def label(sh):
    return (sh.aten_time / sh.best >= 1.03).astype(int)
def run(kind, target_worst=1.03):
    t = shapes.aten_time.copy(); info = {}
    for name, test in folds(shapes, "family", 5):
        sub = shapes.subset(~test); real = ~shape_table(sub)["decision_free"]
        ci, ni = np.load(f"/tmp/hrw/inner_cm_{name}.npy"), np.load(f"/tmp/hrw/inner_nt_{name}.npy")
        F, y = feats(sub, ci, ni)[real], label(sub)[real]
        clf = (LogisticRegression(C=1.0, max_iter=1000) if kind == "logit" else
               XGBClassifier(n_estimators=100, max_depth=2, learning_rate=0.1, nthread=1, verbosity=0)).fit(F, y)
        p = np.zeros(sub.n_shapes); p[real] = clf.predict_proba(F)[:, 1]
        row, _ = best_template_gaps(sub, ci)
        thr = 1.01
        for th in np.sort(np.unique(p[real]))[::-1]:     # lower the bar while no inner pick loses > 3 %
            tt = pick_times(sub, np.where((p >= th) & (row >= 0), row, -1))
            if (tt[real] / sub.aten_time[real]).max() > target_worst: break
            thr = th
        Fo = feats(shapes, cm, nt); po = clf.predict_proba(Fo)[:, 1]
        ro, _ = best_template_gaps(shapes, cm)
        tt = pick_times(shapes, np.where((po >= thr) & (ro >= 0), ro, -1)); t[test] = tt[test]
        info[name] = (round(float(thr), 3), int(((po >= thr) & test).sum()))
    real = ~shape_table(shapes)["decision_free"]
    print(kind, info, {k: round(v, 4) for k, v in capture_stats(shapes.aten_time[real], shapes.best[real], t[real]).items()})
    # AUC on the outer shapes
    from sklearn.metrics import roc_auc_score
for kind in ("logit", "xgb"):
    run(kind)
