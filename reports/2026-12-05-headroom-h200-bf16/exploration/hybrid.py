import numpy as np
from kselect.training.learn.headroom import shape_table, template_order, split_stats, best_template_gaps
from kselect.selector.decide.gap_policy import templates_to_time
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes(); tab = shape_table(shapes); real = ~tab["decision_free"]
cm = np.load("/tmp/hr/cost_casc30.npy"); ns = np.load("/tmp/hr/cost_nearest_shape.npy")
om, rm = template_order(shapes, cm); on, rn = template_order(shapes, ns)
_, gap = best_template_gaps(shapes, cm)
for policy in ("tiers", "fixed4"):
    n = np.array([templates_to_time(g) for g in gap]) if policy == "tiers" else np.full(shapes.n_shapes, 4)
    for n_near in (0, 1, 2):
        t = shapes.aten_time.copy(); timed = np.zeros(shapes.n_shapes, int)
        for s in range(shapes.n_shapes):
            k = n[s]
            if k == 0: continue
            nn = min(n_near, k - 1) if k > 1 else 0
            rows_m = om[(shapes.sid[om] == s)][: k - nn]
            rows_n = [r for r in on[(shapes.sid[on] == s)] if r not in set(rows_m)][:nn]
            rows = list(rows_m) + list(rows_n)
            timed[s] = len(rows)
            if rows: t[s] = min(t[s], shapes.time[rows].min())
        st = split_stats(shapes, t, tab)
        print(policy, "near", n_near, round(st["realistic"]["capture"], 3), "timed", round(timed[real].mean(), 2), {c: round(v["capture"], 3) for c, v in st["classes"].items()})
