"""How noisy the winner labels are: near-tie sets bounded from the winners' own times, and
how smooth the winners are along M."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from kselect.training.amd.tables import INPUT_COLUMNS, LABEL_COLUMN, SERIES_COLUMNS, TIME_COLUMN


def near_tie_sets(frame: pd.DataFrame, classes: Sequence[str], tolerance: float = 0.05) -> np.ndarray:
    """Backends provably within `tolerance` of each row's winner, as a [rows, classes] mask.

    Only winners are recorded, so a loser's time is unknown, but it can be bounded: in one
    series (same GPU, N, K, flags) a backend that won a problem with M' >= M in time t' can
    run the smaller-M problem in at most t' (its kernel covers the extra rows). Backend b is
    a near-tie at row i when that bound is <= (1 + tolerance) * winner time. The winner is
    always in its own set. With tolerance 0 this also finds provably wrong labels (another
    backend's bound is below the recorded winner's time).
    """
    index = {c: i for i, c in enumerate(classes)}
    ok = np.zeros((len(frame), len(classes)), dtype=bool)
    bound = upper_bounds(frame, classes)
    times = frame[TIME_COLUMN].to_numpy(dtype=float)
    ok |= bound <= (1.0 + tolerance) * times[:, None]
    labels = frame[LABEL_COLUMN].map(index).to_numpy()
    has = ~pd.isna(labels)
    ok[np.flatnonzero(has), labels[has].astype(int)] = True
    return ok


def upper_bounds(frame: pd.DataFrame, classes: Sequence[str]) -> np.ndarray:
    """Per row and backend, the smallest winning time of that backend at M' >= M in the series."""
    index = {c: i for i, c in enumerate(classes)}
    bound = np.full((len(frame), len(classes)), np.inf)
    frame = frame.reset_index(drop=True)  # group indices become row positions
    for _, group in frame.groupby(list(SERIES_COLUMNS), sort=False, dropna=False):
        rows = group.index.to_numpy()
        order = np.argsort(-group["M"].to_numpy(), kind="stable")  # largest M first
        ms = group["M"].to_numpy()[order]
        ts = group[TIME_COLUMN].to_numpy(dtype=float)[order]
        labs = group[LABEL_COLUMN].to_numpy()[order]
        best = np.full(len(classes), np.inf)
        j = 0
        while j < len(order):  # rows of equal M see each other (M' >= M includes M)
            same = j
            while same < len(order) and ms[same] == ms[j]:
                c = index.get(labs[same])
                if c is not None:
                    best[c] = min(best[c], ts[same])
                same += 1
            bound[rows[order[j:same]]] = best
            j = same
    return bound


def label_noise_summary(frame: pd.DataFrame, tolerance: float = 0.05) -> dict:
    """How noisy the winner labels are, for the report: ties, contradictions, duplicates."""
    classes = sorted(frame[LABEL_COLUMN].unique())
    bound = upper_bounds(frame, classes)
    times = frame[TIME_COLUMN].to_numpy(dtype=float)
    own = frame[LABEL_COLUMN].map({c: i for i, c in enumerate(classes)}).to_numpy()
    other = bound.copy()
    other[np.arange(len(frame)), own] = np.inf
    contradicted = other.min(axis=1) < times
    ties = near_tie_sets(frame, classes, tolerance).sum(axis=1) > 1
    key = [c for c in INPUT_COLUMNS]
    dup = frame.groupby(key, dropna=False)[LABEL_COLUMN].nunique()
    loose = frame.groupby(["gfx", "cu_num", "M", "N", "K"])[LABEL_COLUMN].nunique()
    return {
        "rows": int(len(frame)),
        "tolerance": tolerance,
        "rows_with_near_tie": int(ties.sum()),
        "rows_provably_not_fastest": int(contradicted.sum()),
        "duplicate_problems_with_different_winners": int((dup > 1).sum()),
        "same_mnk_different_flags_different_winners": int((loose > 1).sum()),
        "series_neighbours": series_neighbour_agreement(frame),
    }


def series_neighbour_agreement(frame: pd.DataFrame) -> dict:
    """How often a row's winner equals its neighbours' along M in its own series.

    A series is one table's problems of one weight matrix (SERIES_COLUMNS plus `table`),
    ordered by M. For every row with a neighbour, `nearest` asks whether the winner of the
    nearest M (in log2 M; the smaller M on a tie) is the same backend, `either` whether the
    winner of the next smaller or next larger M is. This predictor reads the labels of the
    very table it scores, so it is not a model: it estimates how smooth (how predictable
    from shape at all) the labels are. `isolated` counts rows whose two neighbours agree with
    each other but not with the row (a one-off flip along M, typical of near-ties).
    """
    keys = list(SERIES_COLUMNS) + (["table"] if "table" in frame.columns else [])
    counts = {"rows": 0, "nearest": 0, "either": 0, "isolated": 0, "neighbours_agree": 0}
    per_arch: dict[str, dict] = {}
    for _, group in frame.groupby(keys, sort=True, dropna=False):
        group = group.sort_values("M", kind="stable")
        labs = group[LABEL_COLUMN].astype(str).to_numpy()
        logm = np.log2(group["M"].to_numpy(dtype=float))
        arch = str(group["gfx"].iloc[0])
        for i in range(len(labs)):
            left = labs[i - 1] if i > 0 else None
            right = labs[i + 1] if i + 1 < len(labs) else None
            if left is None and right is None:
                continue
            if left is None:
                nearest = right
            elif right is None:
                nearest = left
            else:
                nearest = left if logm[i] - logm[i - 1] <= logm[i + 1] - logm[i] else right
            agree = left is not None and right is not None and left == right
            hit = {
                "rows": 1,
                "nearest": int(nearest == labs[i]),
                "either": int(labs[i] in (left, right)),
                "isolated": int(agree and labs[i] != left),
                "neighbours_agree": int(agree),
            }
            entry = per_arch.setdefault(arch, dict.fromkeys(counts, 0))
            for k, v in hit.items():
                counts[k] += v
                entry[k] += v

    def rates(c: dict) -> dict:
        n = c["rows"]
        return {
            "rows": n,
            "nearest": c["nearest"] / n if n else None,
            "either": c["either"] / n if n else None,
            "isolated": c["isolated"] / n if n else None,
        }

    return {**rates(counts), "per_arch": {a: rates(c) for a, c in sorted(per_arch.items())}}
