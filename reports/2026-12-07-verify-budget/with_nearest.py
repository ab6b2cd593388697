"""The reach budget (unclipped.py) with verify as shipped: the nearest-shape slot in (the last of
the 4 timed templates is the held-out nearest-shape lookup's pick, gap_policy.with_nearest_slot).
frontier.py and unclipped.py leave the slot out on both sides; shipped verify has it, and a
budget that times no template on a GEMM also drops the slot there. Does the reach budget still
keep capture within 1 point of the shipped verify, held out by model family?

    python reports/2026-12-07-verify-budget/with_nearest.py > reports/2026-12-07-verify-budget/with_nearest.json
"""

import json

import numpy as np
import unclipped

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_frame
from kselect.training.learn.headroom import best_template_gaps, shape_table, split_stats, verify_with_nearest
from kselect.training.learn.held_out import load_data
from kselect.training.learn.nearest_table import NearestTemplatesRanker
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs

CAP = 4
REACH_CLIP = 0.7
REACH_BOUNDS = (0.4, 0.5)  # time CAP templates where reach's best gap is within, else none


def nearest_costs(data: str, model_path: str) -> np.ndarray:
    """The nearest-shape lookup's held-out preference per row (held out by family, as verify's
    table would be built without the family)."""
    df, fp = load_data(data)
    shapes = ShapeSet.from_frame(df)
    CostModel.load(model_path, fingerprint=fp, force=True)  # the same card check as the others
    return held_out_costs(shapes, featurize_frame(shapes.rows, fp), NearestTemplatesRanker, "family")


def row(shapes, cost, near_cost, n, table, name) -> dict:
    pick, timed = verify_with_nearest(shapes, cost, near_cost, n)
    real = ~table["decision_free"]
    stats = split_stats(shapes, pick, table)["realistic"]
    return {
        "budget": name,
        "capture": round(float(stats["capture"]), 4),
        "templates_mean": round(float(timed[real].mean()), 3),
        "templates_total": int(timed[real].sum()),
        "aten_alone": int(((timed == 0) & real).sum()),
    }


def case(model_path: str, data: str) -> dict:
    shapes, cost = unclipped.held_out(model_path, data, unclipped.CLIPS[0])
    _, reach_cost = unclipped.held_out(model_path, data, REACH_CLIP)
    _, reach_gap = best_template_gaps(shapes, reach_cost)
    near_cost = nearest_costs(data, model_path)
    table = shape_table(shapes)
    rows = [row(shapes, cost, near_cost, np.full(shapes.n_shapes, CAP), table, f"{CAP} everywhere (as shipped)")]
    for bound in REACH_BOUNDS:
        n = np.where(reach_gap <= bound, CAP, 0)
        rows.append(row(shapes, cost, near_cost, n, table, f"reach (clip {REACH_CLIP}) <= {bound}: {CAP}, else none"))
    return {"model": model_path, "data": data, "shapes": int((~table["decision_free"]).sum()), "rows": rows}


if __name__ == "__main__":
    print(json.dumps([case(m, d) for m, d in unclipped.frontier.CASES], indent=1))
