import numpy as np, time, sys
from kselect.training.learn.ranking_metrics import held_out_costs
from kselect.training.learn.baselines import baseline_rankers
from kselect.training.learn.train import ModelRanker
from kselect.selector.model.cost_model import CostModel
import sys as _s; _s.path.insert(0, __import__("os").path.dirname(__file__)); from cache import load_shapes
shapes, fp = load_shapes()
X = np.load("/tmp/hr/X.npy")
m = CostModel.load("models/h200-bf16.json", fingerprint=fp)
params = m.get_params()
rk = {"cost_model": lambda: ModelRanker(params, 320), **{k: v for k, v in baseline_rankers().items() if k != "roofline"}}
for name in sys.argv[1:]:
    t=time.time()
    c = held_out_costs(shapes, X, rk[name], "family")
    np.save(f"/tmp/hr/cost_{name}.npy", c); print(name, time.time()-t, flush=True)
