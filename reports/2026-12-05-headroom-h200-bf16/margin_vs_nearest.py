"""Is the cost model's capture above nearest-shape's by more than chance? Held out by family,
realistic shapes, ATen + k templates: the per-fold captures and their spread, each family's
share of the headroom, and a bootstrap over shapes of the difference (model - nearest shape).

    python reports/2026-12-05-headroom-h200-bf16/margin_vs_nearest.py > reports/2026-12-05-headroom-h200-bf16/margin-vs-nearest.json
"""
import json

import numpy as np

from kselect.selector.model.features import featurize_frame
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.baselines import NearestShapeRanker
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.headroom import headroom, shape_table, templates_plus_aten
from kselect.training.learn.train import ModelRanker


def main() -> dict:
    df, fp = load_data("data/h200-bf16")
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    params = CostModel.load("models/h200-bf16.json", fingerprint=fp).get_params()
    costs = {"cost_model": held_out_costs(shapes, X, lambda: ModelRanker(params), "family"),
             "nearest_shape": held_out_costs(shapes, X, NearestShapeRanker, "family")}
    real = ~shape_table(shapes)["decision_free"]
    room = headroom(shapes)[real]
    fam = shapes.family[real]
    out = {"family_headroom_share": {f: round(float(room[fam == f].sum() / room.sum()), 3) for f in np.unique(fam)}}
    rng = np.random.default_rng(0)
    for k in (1, 4):
        gain = {n: np.log(shapes.aten_time / templates_plus_aten(shapes, c, k))[real] for n, c in costs.items()}
        diff = gain["cost_model"] - gain["nearest_shape"]
        point = float(diff.sum() / room.sum())
        boots = []
        for _ in range(2000):
            i = rng.integers(0, len(room), len(room))
            boots.append(diff[i].sum() / room[i].sum())
        per_fold = {f: (float(diff[fam == f].sum() / room[fam == f].sum()) if room[fam == f].sum() > 0 else None)
                    for f in np.unique(fam)}
        out[f"k={k}"] = {"capture_difference": round(point, 4),
                         "bootstrap_95": [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)],
                         "bootstrap_sd": round(float(np.std(boots)), 4),
                         "per_fold_difference": {f: (round(v, 3) if v is not None else None) for f, v in per_fold.items()}}
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
