"""Scores of a ranking of backends: top-1, top-2, per class, confusion, and top-1 counted as a
hit when it is a near-tie of the winner."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from kselect.training.amd.label_noise import near_tie_sets
from kselect.training.amd.tables import LABEL_COLUMN


def ranked(scores: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    """Class names per row, best first; ties go to the earlier class (stable)."""
    order = np.argsort(-np.asarray(scores, dtype=float), axis=1, kind="stable")
    return np.asarray(classes)[order]


def metrics(
    y_true: Sequence[str],
    ranking: np.ndarray,
    labels: Sequence[str] | None = None,
    acceptable: Callable[[int, str], bool] | None = None,
) -> dict:
    """Top-1/top-2 accuracy, per-class precision/recall and confusion matrix.

    `ranking` holds each row's classes best first. `acceptable(i, name)` says whether a
    backend is a near-tie of row i's winner: it adds `within_tolerance` (top-1 counted as a
    hit when it is a near-tie) next to the strict numbers; the strict ones never change.
    """
    y_true = np.asarray(y_true).astype(str)
    n = len(y_true)
    if n == 0:
        raise ValueError("no rows to evaluate")
    top1 = ranking[:, 0]
    hit1 = top1 == y_true
    hit2 = hit1 | ((ranking[:, 1] == y_true) if ranking.shape[1] > 1 else False)
    labels = list(labels) if labels is not None else sorted(set(y_true) | set(top1))
    pos = {c: i for i, c in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)), dtype=int)
    for t, p in zip(y_true, top1):
        confusion[pos[t], pos[p]] += 1
    per_class = {}
    for c, i in pos.items():
        tp = int(confusion[i, i])
        predicted = int(confusion[:, i].sum())
        support = int(confusion[i, :].sum())
        per_class[c] = {
            "precision": tp / predicted if predicted else None,
            "recall": tp / support if support else None,
            "support": support,
            "predicted": predicted,
        }
    out = {
        "n": n,
        "accuracy": float(hit1.mean()),
        "top2": float(np.mean(hit2)),
        "per_class": per_class,
        "labels": labels,
        "confusion": confusion.tolist(),
    }
    if acceptable is not None:
        near = np.array([acceptable(i, p) for i, p in enumerate(top1)], dtype=bool)
        out["within_tolerance"] = float(np.mean(hit1 | near))
    return out


def tolerance_judge(frame: pd.DataFrame, tolerance: float) -> Callable[[int, str], bool]:
    """acceptable(i, backend) over `frame`'s rows, from near_tie_sets on the same rows."""
    classes = sorted(frame[LABEL_COLUMN].unique())
    ok = near_tie_sets(frame, classes, tolerance)
    pos = {c: i for i, c in enumerate(classes)}
    return lambda i, name: name in pos and bool(ok[i, pos[name]])
