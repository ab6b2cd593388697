"""Held-out (family) costs of the model recipe and nearest-shape baseline, cached."""
import sys, time, numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.selector.model.features import featurize_frame
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.train import ModelRanker
from kselect.training.learn.baselines import NearestShapeRanker
df, fp = load_data("data/h200-bf16")
shapes = ShapeSet.from_frame(df)
X = featurize_frame(shapes.rows, fp)
np.save("/tmp/hrw/X.npy", X)
m = CostModel.load("models/h200-bf16.json")
params = m.get_params()
t=time.time()
raw = np.full(len(X), np.nan)
c = held_out_costs(shapes, X, lambda: ModelRanker(params, 150), "family", 5, raw_out=raw)
np.save("/tmp/hrw/cm.npy", c); np.save("/tmp/hrw/cm_raw.npy", raw)
print("cm", time.time()-t)
c = held_out_costs(shapes, X, NearestShapeRanker, "family", 5)
np.save("/tmp/hrw/ns.npy", c)
print("done", time.time()-t)
