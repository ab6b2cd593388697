import numpy as np, sys, json
from kselect.training.learn.ranking_metrics import held_out_costs
from kselect.training.learn.train import ModelRanker
from kselect.training.learn.headroom import shape_table, templates_plus_aten, split_stats, simulate_policies
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes()
X = np.load("/tmp/hr/X.npy"); tab = shape_table(shapes)
base = json.load(open("/tmp/hr/m/h200-bf16.meta.json"))["hyper_parameters"]
for name, over in json.loads(sys.argv[1]).items():
    p = {**base, **over}
    c = held_out_costs(shapes, X, lambda: ModelRanker(p), "family")
    np.save(f"/tmp/hr/cost_{name}.npy", c)
    sim = simulate_policies(shapes, c)
    caps = {k: round(split_stats(shapes, templates_plus_aten(shapes, c, k), tab)["realistic"]["capture"], 3) for k in (1, 2, 4, 8)}
    v = split_stats(shapes, sim["verify"], tab)["realistic"]["capture"]; pr = split_stats(shapes, sim["predict"], tab)["realistic"]
    print(name, caps, "verify", round(v, 3), "n", round(sim["verify_templates"][~tab["decision_free"]].mean(), 2), "predict", round(pr["capture"], 3), round(pr["worst_pick_over_aten"], 3), flush=True)
