import numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.headroom import shape_table, best_template_gaps, template_order, capture_stats
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
tab = shape_table(shapes); real = ~tab["decision_free"]
room = np.log(shapes.aten_time / shapes.best)
def top_row(c):
    o, r = template_order(shapes, c, one_per_family=False)
    row = np.full(shapes.n_shapes, -1); row[shapes.sid[o[r == 0]]] = o[r == 0]; return row
for name, c in (("model", cm), ("lookup", np.where(np.isfinite(nt), nt, np.inf))):
    row = top_row(c)
    t = np.where(row >= 0, shapes.time[np.maximum(row, 0)], shapes.aten_time)
    gain = np.log(shapes.aten_time / t)
    print(name, "top-1 alone", (gain[real].sum() / room[real].sum()).round(3),
          "oracle-gated (take only if it wins)", (np.maximum(gain, 0)[real].sum() / room[real].sum()).round(3),
          "gated >=3% wins only", (np.where(gain >= np.log(1.03), gain, 0)[real].sum() / room[real].sum()).round(3))
_, gap = best_template_gaps(shapes, cm)
row = top_row(cm); t = np.where(row >= 0, shapes.time[np.maximum(row, 0)], shapes.aten_time)
gain = np.log(shapes.aten_time / t)
idx = np.flatnonzero(real & (gap < 0.0)); idx = idx[np.argsort(gap[idx])]
first = shapes.rows.iloc[shapes.starts]
for s in idx:
    print(f"{first.M.iloc[s]}x{first.N.iloc[s]}x{first.K.iloc[s]} {shapes.family[s]:12s} gap {gap[s]:+.3f} measured t/aten {np.exp(-gain[s]):.3f} room {np.exp(-room[s]):.3f}")
