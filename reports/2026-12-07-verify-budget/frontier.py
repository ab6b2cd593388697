"""Verify's budget against its capture, held out by model family, for the shipped models on their
cards' data: how many templates verify times (gap tiers on the best template's predicted gap to
ATen) against the share of the measured gain over cuBLAS it keeps. The shipped tiers time 4
wherever the gap is <= 0.30, the training target's clip, so on every GEMM; the question
(issue "trusted on every Hopper card", run 8) is whether a budget that follows the prediction
keeps capture within 1 point while timing fewer templates. The nearest-shape slot is left out on
both sides (the model's own picks only), so the comparison is tier against tier.

    python reports/2026-12-07-verify-budget/frontier.py > reports/2026-12-07-verify-budget/frontier.json
"""

import json
import sys

import numpy as np

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_frame
from kselect.training.learn.headroom import best_template_gaps, shape_table, split_stats, templates_plus_aten
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.train import ATEN_GAP_MAX, ModelRanker

CASES = (("models/h200-bf16.json", "data/h200-bf16"), ("models/hopper-bf16.json", "data/h100-bf16-retrain/data"))
TIERS = (
    ((9, 4),),  # the shipped budget in effect: 4 everywhere
    ((0.25, 4), (9, 1)),
    ((0.20, 4), (9, 2)),
    ((0.20, 4), (9, 1)),
    ((0.15, 4), (0.25, 2), (9, 1)),
    ((0.10, 4), (0.20, 2), (9, 1)),
    ((0.15, 4), (9, 1)),
    ((9, 2),),
    ((9, 1),),
)


def held_out(model_path: str, data: str, gap_max: float = ATEN_GAP_MAX):
    """(shapes, held-out costs by model family) of the model's recipe on `data`, its gap target
    clipped at `gap_max`."""
    df, fp = load_data(data)
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    params = CostModel.load(model_path, fingerprint=fp, force=True).get_params()
    return shapes, held_out_costs(shapes, X, lambda: ModelRanker(params, aten_gap_max=gap_max), "family")


def tier_rows(shapes, cost, gap, tiers_list) -> list[dict]:
    """Per tier set: verify's capture over the realistic shapes when it times, beside ATen, the
    templates `cost` ranks first -- as many as the first tier whose bound the shape's `gap` is
    within gives (0: ATen alone) -- and how many templates that is."""
    table = shape_table(shapes)
    real = ~table["decision_free"]
    rows = []
    for tiers in tiers_list:
        n = np.zeros(shapes.n_shapes, dtype=np.int64)
        for bound, k in reversed(tiers):
            n[gap <= bound] = k
        stats = split_stats(shapes, templates_plus_aten(shapes, cost, n), table)["realistic"]
        rows.append(
            {
                "tiers": tiers,
                "capture": round(float(stats["capture"]), 4),
                "templates_mean": round(float(n[real].mean()), 3),
                "templates_total": int(n[real].sum()),
                "aten_alone": int(((n == 0) & real).sum()),
            }
        )
    return rows


def gap_quantiles(shapes, gap, qs) -> dict:
    """Quantiles of the best template's predicted gap over the realistic shapes."""
    finite = gap[~shape_table(shapes)["decision_free"] & np.isfinite(gap)]
    return {q: round(float(np.quantile(finite, q)), 3) for q in qs}


def frontier(model_path: str, data: str) -> dict:
    shapes, cost = held_out(model_path, data)
    _, gap = best_template_gaps(shapes, cost)
    return {
        "model": model_path,
        "data": data,
        "shapes": int((~shape_table(shapes)["decision_free"]).sum()),
        "gap_quantiles": gap_quantiles(shapes, gap, (0.1, 0.25, 0.5, 0.75, 0.9)),
        "tiers": tier_rows(shapes, cost, gap, TIERS),
    }


if __name__ == "__main__":
    cases = CASES if len(sys.argv) == 1 else [tuple(sys.argv[1:3])]
    print(json.dumps([frontier(m, d) for m, d in cases], indent=1))
