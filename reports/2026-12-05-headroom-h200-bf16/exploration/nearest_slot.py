import sys, numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.headroom import (
    shape_table,
    template_order,
    split_stats,
    best_template_gaps,
    tile_family_ids,
)
from kselect.training.learn.nearest_table import NearestTemplatesRanker
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
X = np.load("/tmp/hrw/X.npy"); cm = np.load("/tmp/hrw/cm.npy")
tab = shape_table(shapes); real = ~tab["decision_free"]
for L in (4, 8, 16):
    nt = held_out_costs(shapes, X, lambda: NearestTemplatesRanker(L), "family", 5); np.save(f"/tmp/hrw/nt{L}.npy", nt)
fam = tile_family_ids(shapes)
om, rm = template_order(shapes, cm)
_, gap = best_template_gaps(shapes, cm)
def sim(nt, n, n_near_from=2):
    t = shapes.aten_time.copy(); timed = np.zeros(shapes.n_shapes, int); hit=0
    for s in range(shapes.n_shapes):
        k = n[s]
        if k == 0: continue
        rows_s = om[shapes.sid[om] == s]
        use_near = k >= n_near_from
        rows = list(rows_s[: k - 1 if use_near else k])
        if use_near:
            a, b = shapes.starts[s], (shapes.starts[s+1] if s+1 < shapes.n_shapes else len(nt))
            c = nt[a:b]; fams = {fam[r] for r in rows}
            cand = [a + i for i in np.argsort(c, kind="stable") if np.isfinite(c[i]) and fam[a+i] not in fams]
            if cand: rows.append(cand[0]); hit += 1
            elif len(rows_s) >= k: rows.append(rows_s[k-1])
        timed[s] = len(rows)
        if rows: t[s] = min(t[s], shapes.time[rows].min())
    st = split_stats(shapes, t, tab)
    return st["realistic"]["capture"], timed[real].mean(), hit, {c: round(v["capture"], 3) for c, v in st["classes"].items()}
from kselect.selector.decide.gap_policy import templates_to_time
tiers = np.array([templates_to_time(g) for g in gap])
for L in (4, 8, 16):
    nt = np.load(f"/tmp/hrw/nt{L}.npy")
    for name, n in (("fixed4", np.full(shapes.n_shapes, 4)), ("fixed3", np.full(shapes.n_shapes, 3)), ("fixed2", np.full(shapes.n_shapes, 2)), ("tiers", tiers)):
        for nf in (1, 2, 99):
            print(L, name, "near_from", nf, sim(nt, n, nf))
