"""The same frontier (frontier.py) for the shipped recipes retrained with the gap target clipped
higher than 0.30, so that a score can say how far past ATen a template lands: can verify then
time no template where none is credibly within reach, and keep its capture?

    python reports/2026-12-07-verify-budget/unclipped.py > reports/2026-12-07-verify-budget/unclipped.json
"""

import json

import numpy as np
from frontier import CASES

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_frame
from kselect.training.learn import train
from kselect.training.learn.headroom import best_template_gaps, shape_table, split_stats, templates_plus_aten
from kselect.training.learn.held_out import load_data
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs

CLIPS = (0.3, 0.7, 1.5)
# (bound, templates) tiers; 0 templates past the last bound: ATen alone, nothing timed
TIERS = (
    ((9, 4),),
    ((0.4, 4), (9, 0)),
    ((0.5, 4), (9, 0)),
    ((0.7, 4), (9, 0)),
    ((0.3, 4), (0.7, 1), (9, 0)),
    ((0.25, 4), (9, 1)),
)


def held_out(model_path: str, data: str, clip: float):
    """(shapes, held-out costs) of the model's recipe with the gap target clipped at `clip`."""
    df, fp = load_data(data)
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    params = CostModel.load(model_path, fingerprint=fp, force=True).get_params()
    train.ATEN_GAP_MAX = clip  # the target's upper clip (failed rows sit there too)
    try:
        return shapes, held_out_costs(shapes, X, lambda: train.ModelRanker(params), "family")
    finally:
        train.ATEN_GAP_MAX = CLIPS[0]


def frontier(model_path: str, data: str, clip: float, reach_clip: float | None = None) -> dict:
    """Tiers on the clip-`clip` model's costs; with `reach_clip`, the budget (the tiers' gap) read
    from a second model of that clip while the shipped clip's costs rank (two models served)."""
    shapes, cost = held_out(model_path, data, clip)
    budget_cost = cost if reach_clip is None else held_out(model_path, data, reach_clip)[1]
    table = shape_table(shapes)
    real = ~table["decision_free"]
    _, gap = best_template_gaps(shapes, budget_cost)
    rows = []
    for tiers in TIERS:
        n = np.zeros(shapes.n_shapes, dtype=np.int64)
        for bound, k in reversed(tiers):
            n[gap <= bound] = k
        stats = split_stats(shapes, templates_plus_aten(shapes, cost, n), table)["realistic"]
        rows.append(
            {
                "tiers": tiers,
                "capture": round(float(stats["capture"]), 4),
                "templates_mean": round(float(n[real].mean()), 3),
                "aten_alone": int(((n == 0) & real).sum()),
            }
        )
    finite = gap[real & np.isfinite(gap)]
    return {
        "model": model_path,
        "data": data,
        "clip": clip,
        "reach_clip": reach_clip,
        "gap_quantiles": {q: round(float(np.quantile(finite, q)), 3) for q in (0.5, 0.75, 0.9, 0.97)},
        "tiers": rows,
    }


if __name__ == "__main__":
    runs = [frontier(m, d, c) for m, d in CASES for c in CLIPS]
    runs += [frontier(m, d, CLIPS[0], reach_clip=c) for m, d in CASES for c in CLIPS[1:]]
    print(json.dumps(runs, indent=1))
