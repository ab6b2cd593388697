"""Held-out (leave-one-family-out) scores of the shipped recipe, then: verify's capture against
the templates it times for several gap tiers, predict's capture against its worst loss for
several margins, and predict's confident picks with what they measured.

    python reports/2026-12-05-headroom-h200-bf16/policy_frontier.py > reports/2026-12-05-headroom-h200-bf16/policy-frontier.json
"""
import json
import sys

import numpy as np

from kselect.selector.model.features import featurize_frame
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.headroom import (
    best_template_gaps,
    pick_times,
    shape_table,
    split_stats,
    templates_plus_aten,
)
from kselect.training.learn.train import ModelRanker

TIERS = [[(0.05, 4), (0.15, 2), (0.3, 1)], [(0.10, 4), (0.20, 2), (0.30, 1)], [(0.15, 4), (0.25, 2), (9, 1)],
         [(0.20, 4), (9, 2)], [(0.25, 4), (9, 1)], [(9, 4)]]
MARGINS = [0.0, 0.03, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20]


def main(model_path="models/h200-bf16.json", data="data/h200-bf16") -> dict:
    df, fp = load_data(data)
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    params = CostModel.load(model_path, fingerprint=fp).get_params()
    cost = held_out_costs(shapes, X, lambda: ModelRanker(params), "family")
    table = shape_table(shapes)
    real = ~table["decision_free"]
    row, gap = best_template_gaps(shapes, cost)
    out = {"verify_tiers": [], "predict_margins": [], "predict_picks": []}
    for tiers in TIERS:
        n = np.zeros(shapes.n_shapes, dtype=np.int64)
        for bound, k in reversed(tiers):
            n[gap <= bound] = k
        s = split_stats(shapes, templates_plus_aten(shapes, cost, n), table)["realistic"]
        out["verify_tiers"].append({"tiers": tiers, "capture": s["capture"], "templates_mean": float(n[real].mean())})
    for m in MARGINS:
        pick = np.where((gap <= -m) & (row >= 0), row, -1)
        s = split_stats(shapes, pick_times(shapes, pick), table)["realistic"]
        out["predict_margins"].append({"margin": m, **s, "templates": int((pick[real] >= 0).sum())})
    first = shapes.rows.iloc[shapes.starts]
    for s in np.flatnonzero(real & (gap <= -0.05) & (row >= 0)):
        out["predict_picks"].append({
            "shape": f"{first['M'].iloc[s]}x{first['N'].iloc[s]}x{first['K'].iloc[s]}", "family": shapes.family[s],
            "predicted_gap": round(float(gap[s]), 3),
            "measured_pick_over_aten": round(float(shapes.time[row[s]] / shapes.aten_time[s]), 3),
            "best_over_aten": round(float(shapes.best[s] / shapes.aten_time[s]), 3)})
    out["predict_picks"].sort(key=lambda r: r["predicted_gap"])
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:]), indent=1))
