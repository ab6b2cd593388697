import numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.headroom import verify_with_nearest, split_stats, shape_table, best_template_gaps
from kselect.selector.decide.gap_policy import templates_to_time
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
tab = shape_table(shapes); real = ~tab["decision_free"]
_, gap = best_template_gaps(shapes, cm)
print("gap quantiles realistic", np.quantile(gap[real], [0, .1, .25, .5, .75, .9, 1]).round(3))
grid = {"shipped": ((0.10, 4), (0.20, 2), (0.30, 1)), "4@.2": ((0.20, 4), (0.30, 1)), "4@.3": ((0.30, 4),),
        "4@.15,2@.3": ((0.15, 4), (0.30, 2)), "4@.1,3@.2,2@.3": ((0.10, 4), (0.20, 3), (0.30, 2)), "4@.05": ((0.05,4),(0.2,2),(0.3,1)),
        "4@.2,2@.3": ((0.2,4),(0.3,2)), "4@.25,1@.3": ((0.25,4),(0.3,1)), "4@inf": ((np.inf, 4),)}
for name, tiers in grid.items():
    n = np.array([templates_to_time(g, tiers) for g in gap])
    t, timed = verify_with_nearest(shapes, cm, nt, n)
    st = split_stats(shapes, t, tab)
    print(f"{name:18s} {st['realistic']['capture']:.4f} timed {timed[real].mean():.2f}", {c: round(v["capture"], 3) for c, v in st["classes"].items()})
