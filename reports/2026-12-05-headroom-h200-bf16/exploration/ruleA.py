import numpy as np
from kselect.training.learn.headroom import shape_table, template_order, pick_times, split_stats
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes(); tab = shape_table(shapes); real = ~tab["decision_free"]
for name in ("casc30", "seed1"):
    c = np.load(f"/tmp/hr/cost_{name}.npy")
    order, rank = template_order(shapes, c)
    g = np.full((shapes.n_shapes, 4), np.inf); top = np.full(shapes.n_shapes, -1)
    for r in range(4):
        rows = order[rank == r]; g[shapes.sid[rows], r] = c[rows]
        if r == 0: top[shapes.sid[rows]] = rows
    print(name)
    for m in (0.05, 0.08, 0.1, 0.12):
        for j, m2 in ((1, 0.0), (1, 0.05), (2, 0.0), (2, 0.05), (3, 0.0), (3, 0.05)):
            ok = (g[:, 0] <= -m) & (g[:, j] <= -m2)
            s = split_stats(shapes, pick_times(shapes, np.where(ok, top, -1)), tab)["realistic"]
            print(f"  m={m} {j+1}th<=-{m2}: cap {s['capture']:.3f} worst {s['worst_pick_over_aten']:.3f} n {int((ok & real).sum())}")
