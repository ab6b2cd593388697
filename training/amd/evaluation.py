"""The model against its baselines: in-sample, and leave-one-table-out (each table is one
network's shapes, so holding one out asks "does this transfer to a new network?"), with
optional nested choice of recipe and hyper-parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from kselect.training.amd.baselines import MajorityBaseline, NearestShapeBaseline
from kselect.training.amd.classifier import BackendWinnerClassifier, train
from kselect.training.amd.metrics import metrics, ranked, tolerance_judge
from kselect.training.amd.recipe import Recipe
from kselect.training.amd.tables import LABEL_COLUMN, TableError


@dataclass
class Evaluation:
    """Model and baseline metrics on one set of rows, plus optional per-table breakdown."""

    model: dict
    baselines: dict
    per_table: list = field(default_factory=list)
    per_arch: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "baselines": self.baselines,
            "per_table": self.per_table,
            "per_arch": self.per_arch,
        }


def _summary(m: dict) -> dict:
    keys = ("n", "accuracy", "top2", "within_tolerance")
    return {k: m[k] for k in keys if k in m}


def evaluate_in_sample(model: BackendWinnerClassifier, frame: pd.DataFrame, tolerance: float = 0.05) -> Evaluation:
    """The given model scored on `frame` (in-sample when `frame` trained it).

    Baselines are fitted on the same rows: majority in-sample; nearest shape leaving each
    row itself out (in-sample it would trivially find the row).
    """
    frame = frame.reset_index(drop=True)
    judge = tolerance_judge(frame, tolerance)
    y = frame[LABEL_COLUMN].to_numpy().astype(str)
    labels = sorted(set(y) | set(model.classes_))
    result = metrics(y, ranked(model.predict_proba(frame), model.classes_), labels, judge)
    majority = MajorityBaseline().fit(frame, y)
    nearest = NearestShapeBaseline(exclude_self=True).fit(frame, y)
    base = {
        "majority": metrics(y, ranked(majority.predict_proba(frame), majority.classes_), labels, judge),
        "nearest_shape": metrics(y, ranked(nearest.predict_proba(frame), nearest.classes_), labels, judge),
    }
    return Evaluation(result, base)


# Candidate (recipe, hyper-parameters) pairs for nested selection: the two label recipes
# crossed with the shipped and a shorter boosting schedule (the variants that moved the
# held-out score most in exploration, in either direction).
NESTED_GRID: tuple[tuple[Recipe, dict], ...] = (
    (Recipe(), {"n_estimators": 150}),
    (Recipe(), {"n_estimators": 60}),
    (Recipe(None, False), {"n_estimators": 150}),
    (Recipe(None, False), {"n_estimators": 60}),
)


def table_folds(frame: pd.DataFrame, folds: int) -> np.ndarray:
    """Fold number per row, whole tables per fold: tables sorted by size (largest first,
    then name) and dealt round-robin, so the folds are deterministic and balanced."""
    sizes = frame["table"].value_counts()
    order = sorted(sizes.index, key=lambda t: (-int(sizes[t]), str(t)))
    fold_of = {t: i % folds for i, t in enumerate(order)}
    return frame["table"].map(fold_of).to_numpy()


def select_config(
    train_rows: pd.DataFrame, candidates: Sequence[tuple[Recipe, dict]] = NESTED_GRID, inner_folds: int = 3
) -> tuple[int, list[float]]:
    """Pick the candidate with the best grouped-by-table CV top-1 on `train_rows` alone.

    Returns (index of the winner, inner accuracy of every candidate); ties go to the
    earlier candidate. Only the rows passed in are read, so inside leave-one-table-out the
    held-out table cannot influence the choice.
    """
    train_rows = train_rows.reset_index(drop=True)
    n_tables = train_rows["table"].nunique()
    folds = min(inner_folds, n_tables)
    if folds < 2:
        return 0, [float("nan")] * len(candidates)
    fold = table_folds(train_rows, folds)
    y = train_rows[LABEL_COLUMN].to_numpy().astype(str)
    scores = []
    for recipe, params in candidates:
        hits = np.zeros(len(train_rows), dtype=bool)
        for f in range(folds):
            held = fold == f
            inner_train = train_rows[~held].reset_index(drop=True)
            if inner_train[LABEL_COLUMN].nunique() < 2:
                continue
            model = train(inner_train, recipe, **params)
            hits[held] = model.predict(train_rows[held]) == y[held]
        scores.append(float(hits.mean()))
    return int(np.argmax(scores)), scores


def leave_one_table_out(
    frame: pd.DataFrame,
    recipe: Recipe = Recipe(),
    params: dict | None = None,
    tolerance: float = 0.05,
    candidates: Sequence[tuple[Recipe, dict]] | None = None,
    inner_folds: int = 3,
) -> Evaluation:
    """Train on all tables but one, score the held-out table; pool every held-out row.

    The tolerance judge uses all loaded rows as evidence (it reads outcomes, but only to
    score, never to predict), so a prediction is a near-tie hit by the same rule in and out.

    With `candidates` (nested selection) the recipe and hyper-parameters are not fixed:
    for each held-out table, select_config picks one of the candidates by grouped CV over
    the remaining tables only, and each per-table entry records the choice (`chosen`).
    """
    frame = frame.reset_index(drop=True)
    tables = sorted(frame["table"].unique())
    if len(tables) < 2:
        raise TableError(f"leave-one-table-out needs at least two tables, got {len(tables)}")
    params = dict(params or {})
    ok_judge = tolerance_judge(frame, tolerance)
    y_all = frame[LABEL_COLUMN].to_numpy().astype(str)
    labels = sorted(set(y_all))
    rankings = {
        name: np.empty((len(frame), len(labels)), dtype=object) for name in ("model", "majority", "nearest_shape")
    }
    per_table = []
    for table in tables:
        held = (frame["table"] == table).to_numpy()
        train_rows = frame[~held].reset_index(drop=True)
        test_rows = frame[held]
        y_tr = train_rows[LABEL_COLUMN].to_numpy().astype(str)
        fold_recipe, fold_params, chosen = recipe, params, None
        if candidates:
            best, inner = select_config(train_rows, candidates, inner_folds)
            fold_recipe, fold_params = candidates[best][0], dict(candidates[best][1])
            chosen = {
                "candidate": best,
                "recipe": fold_recipe.to_dict(),
                "params": fold_params,
                "inner_accuracy": inner,
            }
        fitted = {
            "model": train(train_rows, fold_recipe, **fold_params),
            "majority": MajorityBaseline().fit(train_rows, y_tr),
            "nearest_shape": NearestShapeBaseline().fit(train_rows, y_tr),
        }
        positions = np.flatnonzero(held)
        row = {"table": table, "n": int(held.sum()), "archs": sorted(test_rows["gfx"].unique())}
        if chosen is not None:
            row["chosen"] = chosen
        for name, est in fitted.items():
            r = ranked(est.predict_proba(test_rows), est.classes_)
            # pad to all labels (classes unseen in training can never be predicted)
            full = np.empty((len(r), len(labels)), dtype=object)
            full[:, : r.shape[1]] = r
            missing = [c for c in labels if c not in set(est.classes_)]
            if missing:
                full[:, r.shape[1] :] = missing
            rankings[name][positions] = full
            local = metrics(y_all[held], full, labels, lambda i, p, pos=positions: ok_judge(pos[i], p))
            row[name] = _summary(local)
        per_table.append(row)
    pooled = {name: metrics(y_all, rankings[name], labels, ok_judge) for name in rankings}
    per_arch = []
    for arch in sorted(frame["gfx"].unique()):
        rows = np.flatnonzero((frame["gfx"] == arch).to_numpy())
        entry = {"arch": arch, "n": int(len(rows))}
        for name in rankings:
            entry[name] = _summary(
                metrics(y_all[rows], rankings[name][rows], labels, lambda i, p, pos=rows: ok_judge(pos[i], p))
            )
        per_arch.append(entry)
    return Evaluation(
        pooled["model"], {"majority": pooled["majority"], "nearest_shape": pooled["nearest_shape"]}, per_table, per_arch
    )
