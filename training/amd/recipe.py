"""How labelled rows become weighted training rows (the label-noise handling lives here, not
in the estimator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kselect.training.amd.label_noise import near_tie_sets
from kselect.training.amd.tables import INPUT_COLUMNS, LABEL_COLUMN


@dataclass(frozen=True)
class Recipe:
    """How labelled rows become weighted training rows.

    near_tie_tolerance: a row whose near-tie set (see near_tie_sets) holds several backends
    is split into one row per backend, weights summing to the row's weight: the model is
    not pushed to prefer one of two backends that measured the same. None turns it off.
    balance_tables: weight rows so each table counts equally (one big table, dsv4, is 44%
    of all rows and would otherwise decide every boundary).
    """

    near_tie_tolerance: float | None = 0.05
    balance_tables: bool = True

    def to_dict(self) -> dict:
        return {"near_tie_tolerance": self.near_tie_tolerance, "balance_tables": self.balance_tables}


def training_rows(frame: pd.DataFrame, recipe: Recipe) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(problems, labels, weights) for fit(), following the recipe."""
    weights = np.ones(len(frame))
    if recipe.balance_tables and "table" in frame.columns:
        sizes = frame["table"].map(frame["table"].value_counts()).to_numpy(dtype=float)
        weights = (1.0 / sizes) * len(frame) / frame["table"].nunique()
    labels = frame[LABEL_COLUMN].to_numpy()
    if recipe.near_tie_tolerance is None:
        return frame.loc[:, list(INPUT_COLUMNS)], labels, weights
    classes = sorted(frame[LABEL_COLUMN].unique())
    ok = near_tie_sets(frame, classes, recipe.near_tie_tolerance)
    rows, labs, ws = [], [], []
    for i in range(len(frame)):
        members = np.flatnonzero(ok[i])
        for c in members:
            rows.append(i)
            labs.append(classes[c])
            ws.append(weights[i] / len(members))
    problems = frame.iloc[rows].loc[:, list(INPUT_COLUMNS)].reset_index(drop=True)
    return problems, np.asarray(labs), np.asarray(ws)
