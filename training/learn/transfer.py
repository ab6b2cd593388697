"""Scoring across cards: a trained model as is on another card's data, and held-out splits that
train on other cards' data too.

`score_as_is` scores a saved or freshly trained model without retraining it: the data's rows
are featurised with the data's own card's fingerprint (the card the GEMMs ran on; or, with
device_features="model", the fingerprint the model was trained with, as the runtime featurises
today), and the headroom capture (verify, predict, ATen + k) comes out as `kselect evaluate`
computes it, beside the nearest-shape baseline held out on the scored data. Scored on the data
it was trained on, it is the in-sample score (optimistic).

`card_splits` makes held-out splits on one card of a pooled ShapeSet (training/learn/pooled.py)
for split_costs: the card's shapes of each held-out fold are tested, and the ranker trains on
- "own": the card's other shapes (the card's own model, held out as usual);
- "pooled": every other card's shapes and the card's other shapes;
- "pooled_family_out": the same less every card's shapes of the held-out families (a family
  scheme only): the pooled recipe on a family no card has measured.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from kselect.selector.decide.nearest import NearestTemplates
from kselect.selector.decide.nearest import from_metadata as nearest_from_metadata
from kselect.training.learn.baselines import NearestShapeRanker
from kselect.training.learn.headroom import headroom_section
from kselect.training.learn.nearest_table import preference_cost
from kselect.training.learn.pooled import card_keys, featurize_rows
from kselect.training.learn.ranking_metrics import KS, EvaluationError, ShapeSet, evaluate_costs, folds, held_out_costs
from kselect.training.learn.train import per_shape_selection_cost

TRAINING_SETS = ("own", "pooled", "pooled_family_out")
DEVICE_FEATURES = ("data", "model")


def card_summary(fp: Mapping) -> dict:
    """The fields that name a card and the device columns its features take."""
    keys = ("gpu_name", "fingerprint_id", "sm_count", "mem_bandwidth_gbs", "l2_cache_bytes", "peak_tflops")
    return {k: fp.get(k) for k in keys}


def model_nearest_table(model) -> NearestTemplates | None:
    """verify's nearest-shape table of a model: the one it was trained with, or its sidecar's."""
    table = getattr(model, "nearest_templates_", None)
    if table is None:
        table = nearest_from_metadata(getattr(model, "metadata_", None))
    return table


def score_as_is(
    df,
    fingerprint: Mapping,
    model,
    scheme: str = "family",
    n_folds: int = 5,
    device_features: str = "data",
) -> tuple[dict, dict, ShapeSet]:
    """(result, costs, shapes) of `model` scored as is on the rows `df` measured on the card of
    `fingerprint`. `result` holds `pct_of_oracle` (evaluate_costs) and `headroom_capture`
    {scheme: headroom_section} with the model as 'cost_model' and the nearest-shape baseline
    held out by `scheme` on these rows; `costs` the rows' costs by ranker (and the model's
    nearest-shape table's preference, verify's lookup slot, as 'nearest_templates')."""
    if device_features not in DEVICE_FEATURES:
        raise EvaluationError(f"device_features must be one of {DEVICE_FEATURES}, got {device_features!r}")
    shapes = ShapeSet.from_frame(df)
    trained_on = dict(getattr(model, "fingerprint", None) or {})
    device = fingerprint if device_features == "data" else trained_on
    if not device:
        raise EvaluationError("the model records no training fingerprint to featurise with")
    X = featurize_rows(shapes.rows, device, getattr(model, "feature_blocks_", ()))  # the model's own columns
    costs = {
        "cost_model": per_shape_selection_cost(model, shapes.sid, X),
        "nearest_shape": held_out_costs(shapes, X, NearestShapeRanker, scheme, n_folds),
    }
    aten_gap = bool(getattr(model, "aten_relative", False))
    table = model_nearest_table(model) if aten_gap else None
    if table is not None:
        costs["nearest_templates"] = preference_cost(table, shapes)
    rankers = {k: v for k, v in costs.items() if k != "nearest_templates"}
    result = {
        "as_is": True,
        "scheme": scheme,
        "scored_on": card_summary(fingerprint),
        "trained_on": card_summary(trained_on),
        "device_features": device_features,
        "featurised_with": card_summary(device),
        "objective": getattr(model, "objective", None),
        "shapes": int(shapes.n_shapes),
        "dropped_shapes": int(shapes.dropped),
        "pct_of_oracle": evaluate_costs(shapes, costs["cost_model"], KS),
        "headroom_capture": {
            scheme: headroom_section(
                shapes, rankers, folds(shapes, scheme, n_folds), aten_gap, near_cost=costs.get("nearest_templates")
            )
        },
        "note": "the model as is, not retrained; nearest_shape is held out by the scheme on the scored data",
    }
    return result, costs, shapes


def card_splits(
    shapes: ShapeSet, card: str, training_set: str, scheme: str = "family", n_folds: int = 5
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, training-shape mask, test-shape mask) per held-out fold of `card`'s shapes in a
    pooled ShapeSet, training on `training_set` (the module docstring); for split_costs."""
    if training_set not in TRAINING_SETS:
        raise EvaluationError(f"unknown training set {training_set!r}: expected one of {TRAINING_SETS}")
    if training_set == "pooled_family_out" and not scheme.startswith("family"):
        raise EvaluationError(f"'pooled_family_out' holds families out; scheme {scheme!r} does not")
    cards, _ = card_keys(shapes.keys)
    on = cards == card
    if not on.any():
        raise EvaluationError(f"no shape of card {card!r} in the pooled shapes (cards: {sorted(set(cards))})")
    out = []
    for name, test_on_card in folds(shapes.subset(on), scheme, n_folds):
        test = np.zeros(shapes.n_shapes, dtype=bool)
        test[on] = test_on_card
        if training_set == "own":
            train = on & ~test
        elif training_set == "pooled":
            train = ~test
        else:
            train = ~np.isin(shapes.family, np.unique(shapes.family[test]))
        out.append((name, train, test))
    return out
