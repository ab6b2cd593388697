import numpy as np, sys
from kselect.training.learn.headroom import shape_table, templates_plus_aten, split_stats
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes()
tab = shape_table(shapes)
for group in sys.argv[1:]:
    c = np.mean([np.load(f"/tmp/hr/cost_{n}.npy") for n in group.split(",")], axis=0)
    np.save(f"/tmp/hr/cost_avg_{group.replace(',','_')}.npy", c)
    print(group, {k: round(split_stats(shapes, templates_plus_aten(shapes, c, k), tab)["realistic"]["capture"], 3) for k in (1,2,4,8)})
