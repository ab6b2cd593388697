import numpy as np
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.headroom import verify_with_nearest, shape_table
df, fp = load_data("data/h200-bf16"); shapes = ShapeSet.from_frame(df)
cm = np.load("/tmp/hrw/cm.npy"); real = ~shape_table(shapes)["decision_free"]
n = np.full(shapes.n_shapes, 4)
t8, _ = verify_with_nearest(shapes, cm, np.load("/tmp/hrw/nt8.npy"), n)
t16, _ = verify_with_nearest(shapes, cm, np.load("/tmp/hrw/nt16.npy"), n)
room = np.log(shapes.aten_time / shapes.best).sum(where=real)
first = shapes.rows.iloc[shapes.starts]
for s in np.flatnonzero(real & (np.abs(t8 - t16) > 1e-12)):
    print(f"{first.M.iloc[s]}x{first.N.iloc[s]}x{first.K.iloc[s]} {shapes.family[s]} L8 {t8[s]/shapes.aten_time[s]:.3f} L16 {t16[s]/shapes.aten_time[s]:.3f} capture delta {np.log(t8[s]/t16[s])/room:+.4f}")
