"""Training verify's budget model beside a 'reg:aten' cost model (selector/model/reach.py): the
cost model's own hyper-parameters, its data, the gap target clipped at `gap_max` instead of
0.30, so the model's best template gap can say a template runs 2x slower than cuBLAS. It only
sets how many templates verify times; the cost model keeps ranking."""

from __future__ import annotations

import time
from typing import Callable

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.reach import REACH_GAP_MAX
from kselect.training.learn.pooled import featurize_rows
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.train import ATEN_GAP_MAX, MAX_ROWS_PER_SHAPE, TrainingError, fit_model, training_rows


def train_reach(
    df, fingerprint, beside: CostModel, gap_max: float = REACH_GAP_MAX, log: Callable = print, progress=None
) -> tuple[CostModel, dict]:
    """(the reach model, its training card): `beside`'s recipe (objective 'reg:aten', its
    hyper-parameters and feature blocks) refitted on `df` with the gap target clipped at
    `gap_max`. `fingerprint`: the card's, or a pool's Devices, as for `train`."""
    if not beside.aten_relative:
        raise TrainingError(
            f"a reach model is trained beside a 'reg:aten' cost model (gaps to ATen); this one's objective is "
            f"{beside.objective}"
        )
    if not gap_max > ATEN_GAP_MAX:
        raise TrainingError(
            f"--gap-max {gap_max} must lie above the cost model's clip ({ATEN_GAP_MAX}): below it the reach "
            "model tells no more than the cost model does"
        )
    t0 = time.perf_counter()
    shapes = ShapeSet.from_frame(df)
    if shapes.n_shapes < 2:
        raise TrainingError(f"need at least 2 shapes with ok measurements, have {shapes.n_shapes}")
    blocks = tuple(beside.feature_blocks_)
    X = featurize_rows(shapes.rows, fingerprint, blocks)
    params = beside.get_params()
    idx = training_rows(shapes, X, params["objective"], MAX_ROWS_PER_SHAPE)
    log(f"{len(shapes.rows)} rows, {shapes.n_shapes} shapes; fitting on {len(idx)} rows, gap clipped at {gap_max}")
    rounds = (
        (lambda d, t: progress("final fit, boosting rounds", d, t))
        if progress
        else (lambda d, t: log(f"  round {d}/{t}"))
    )
    model = fit_model(shapes, X, idx, params, progress=rounds, blocks=blocks, aten_gap_max=gap_max)
    card = {
        "train_rows": int(len(idx)),
        "dataset_rows": int(len(shapes.rows)),
        "shapes": int(shapes.n_shapes),
        "train_seconds": round(time.perf_counter() - t0, 1),
    }
    return model, card
