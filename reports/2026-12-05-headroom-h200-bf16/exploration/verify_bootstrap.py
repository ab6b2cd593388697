"""Bootstrap over the realistic shapes: verify's capture, and its margin over the model's ATen + 4."""
import numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.headroom import simulate_policies, templates_plus_aten, shape_table
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); nt = np.load("/tmp/hrw/nt8.npy")
real = ~shape_table(shapes)["decision_free"]
a, b = shapes.aten_time[real], shapes.best[real]
v = simulate_policies(shapes, cm, near_cost=nt)["verify"][real]
m4 = templates_plus_aten(shapes, cm, 4)[real]
room, gv, gm = np.log(a / b), np.log(a / v), np.log(a / m4)
rng = np.random.default_rng(0)
cv, d = [], []
for _ in range(10000):
    i = rng.integers(0, len(a), len(a))
    cv.append(gv[i].sum() / room[i].sum()); d.append((gv[i].sum() - gm[i].sum()) / room[i].sum())
print(f"verify capture {gv.sum() / room.sum():.4f}, 95 % interval {np.percentile(cv, 2.5):.4f}..{np.percentile(cv, 97.5):.4f}, "
      f"P(capture >= 0.85) {np.mean(np.array(cv) >= 0.85):.3f}")
print(f"verify - model ATen+4 {(gv.sum() - gm.sum()) / room.sum():+.4f}, 95 % interval {np.percentile(d, 2.5):+.4f}..{np.percentile(d, 97.5):+.4f}")
print("shapes where the slot changed the outcome:", int((np.abs(v - m4) > 1e-12).sum()), "better", int((v < m4 - 1e-12).sum()), "worse", int((v > m4 + 1e-12).sum()))
