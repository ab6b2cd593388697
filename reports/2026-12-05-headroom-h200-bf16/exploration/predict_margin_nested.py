"""predict: a margin (and a lookup-agreement gate) chosen inside training folds."""
import numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, folds
from kselect.training.learn.headroom import (
    shape_table,
    best_template_gaps,
    pick_times,
    capture_stats,
    template_order,
    tile_family_ids,
)
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
MARGINS = np.round(np.arange(0.0, 0.31, 0.01), 2)
def lookup_top(sh, near):
    o, r = template_order(sh, np.where(np.isfinite(near), near, np.inf), one_per_family=False)
    row = np.full(sh.n_shapes, -1); o = o[np.isfinite(near[o])]
    sid = sh.sid[o]; first = np.r_[True, sid[1:] != sid[:-1]] if len(o) else np.zeros(0, bool)
    row[sid[first]] = o[first]; return row
def picks(sh, c, near, m, agree):
    row, gap = best_template_gaps(sh, c)
    ok = (gap <= -m) & (row >= 0)
    if agree:
        fam = tile_family_ids(sh); lt = lookup_top(sh, near)
        ok &= (lt >= 0) & (fam[np.maximum(lt, 0)] == fam[np.maximum(row, 0)])
    return pick_times(sh, np.where(ok, row, -1))
def stats(sh, t):
    real = ~shape_table(sh)["decision_free"]
    return capture_stats(sh.aten_time[real], sh.best[real], t[real])
def choose(sh, c, near, agree):
    best = None
    for m in MARGINS:
        st = stats(sh, picks(sh, c, near, m, agree))
        if st["worst_pick_over_aten"] <= 1.03 and (best is None or st["capture"] > best[1] + 1e-12):
            best = (m, st["capture"])
    return best[0] if best else np.inf
tab = shape_table(shapes); real = ~tab["decision_free"]
for agree in (False, True):
    t = shapes.aten_time.copy(); ch = {}
    for name, test in folds(shapes, "family", 5):
        sub = shapes.subset(~test)
        m = choose(sub, np.load(f"/tmp/hrw/inner_cm_{name}.npy"), np.load(f"/tmp/hrw/inner_nt_{name}.npy"), agree)
        ch[name] = m
        tt = picks(shapes, cm, nt, m, agree); t[test] = tt[test]
    print("agree" if agree else "margin", ch, stats(shapes, t))
    for m in (0.0, 0.05, 0.1, 0.12, 0.15):
        print("   outer-only (not a choice) m", m, {k: round(v, 3) for k, v in stats(shapes, picks(shapes, cm, nt, m, agree)).items() if k != "shapes"})
