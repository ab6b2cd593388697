"""Baselines that need no learning, with the estimator's fit / predict_proba interface:
per-arch majority and nearest shape."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd


class MajorityBaseline:
    """Ranks backends by how often they won on the same arch in training (global fallback)."""

    def fit(self, X: pd.DataFrame, y: Sequence[str]):
        y = np.asarray(y).astype(str)
        self.classes_ = np.unique(y)
        self.global_ = pd.Series(y).value_counts().reindex(self.classes_, fill_value=0)
        self.per_arch_ = {
            arch: pd.Series(y[(X["gfx"] == arch).to_numpy()]).value_counts().reindex(self.classes_, fill_value=0)
            for arch in X["gfx"].unique()
        }
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        rows = [self.per_arch_.get(arch, self.global_).to_numpy(dtype=float) for arch in X["gfx"]]
        scores = np.vstack(rows) if rows else np.zeros((0, len(self.classes_)))
        # ties broken by global frequency, then name order (tiny, keeps ranking total)
        return scores + 1e-6 * self.global_.to_numpy(dtype=float) / max(len(X), 1)


class NearestShapeBaseline:
    """Ranks backends by their nearest training problem in (log2 M, log2 N, log2 K).

    Neighbours are searched among training rows of the same arch where there are any,
    otherwise among all rows. Score of a backend = -(distance to its nearest win), so top-1
    is the nearest row's winner and top-2 the next-nearest different winner.
    """

    def __init__(self, exclude_self: bool = False):
        self.exclude_self = exclude_self  # leave-one-row-out when scoring the fit rows

    def fit(self, X: pd.DataFrame, y: Sequence[str]):
        self.classes_ = np.unique(np.asarray(y).astype(str))
        self.points_ = np.log2(X[["M", "N", "K"]].to_numpy(dtype=float))
        self.arch_ = X["gfx"].to_numpy()
        self.codes_ = np.searchsorted(self.classes_, np.asarray(y).astype(str))
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        pts = np.log2(X[["M", "N", "K"]].to_numpy(dtype=float))
        scores = np.full((len(X), len(self.classes_)), -np.inf)
        for i, (p, arch) in enumerate(zip(pts, X["gfx"].to_numpy())):
            pool = self.arch_ == arch
            if not pool.any():
                pool = np.ones(len(self.arch_), dtype=bool)
            dist = np.sqrt(((self.points_ - p) ** 2).sum(axis=1))
            if self.exclude_self:
                pool = pool & ~((dist == 0) & (self.arch_ == arch) & (np.arange(len(dist)) == i))
            for c in range(len(self.classes_)):
                sel = pool & (self.codes_ == c)
                if sel.any():
                    scores[i, c] = -dist[sel].min()
        return scores
