"""Baselines the cost model must beat, under the same held-out evaluation (same Ranker API).

- stock DEFAULT: not a ranker; see evaluate.default_metrics (it benchmarks its whole list);
- RooflineRanker: an analytic wave/roofline time per candidate, in the spirit of Triton's
  old `estimate_matmul_time`: no learning at all;
- ForestRanker: a scikit-learn random forest on the same features and log-relative target;
- NearestShapeRanker: a lookup: rank by how each candidate did on the nearest training
  shape (log-space distance of M, N, K; same layout preferred).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kselect.selector.decide.nearest import KIND_PENALTY, NEIGHBOUR_STEP, NEIGHBOURS
from kselect.selector.model.features import FEATURE_NAMES, estimated_time_ms, infeasible
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.train import REG_CAP, log_rel_target, sample_rows

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
ATEN_EFFICIENCY = 0.80  # assumed fraction of roofline cuBLAS reaches
DECOMPOSE_K_EFFICIENCY = 0.6  # split-K partial products + a reduction
LAUNCH_MS = 0.004


def _col(X: np.ndarray, name: str) -> np.ndarray:
    return X[:, _F[name]].astype(np.float64)


@dataclass
class RooflineRanker:
    """Analytic time: tiles in waves over the SMs at per-SM peak, vs tile traffic over bandwidth."""

    name: str = "roofline"

    def fit(self, shapes: ShapeSet, X: np.ndarray) -> "RooflineRanker":
        return self

    def cost(self, shapes: ShapeSet, X: np.ndarray) -> np.ndarray:
        t_roof = 10 ** _col(X, "log10_t_roofline_ms")
        t_tile = estimated_time_ms(X)
        # pipelining: fewer than 3 stages cannot hide load latency; more warps hide it better
        stages, warps = _col(X, "num_stages"), _col(X, "num_warps")
        pipe = 1.0 + 0.15 * np.clip(3 - stages, 0, None) + 0.05 * (warps < 4)
        over = infeasible(X)
        t = np.where(
            _col(X, "tmpl_aten") > 0,
            t_roof / ATEN_EFFICIENCY,
            np.where(
                _col(X, "tmpl_decompose_k") > 0,
                t_roof / DECOMPOSE_K_EFFICIENCY * (1 + 0.02 * _col(X, "k_split")),
                t_tile * pipe,
            ),
        )
        return np.where(over, np.inf, t + LAUNCH_MS)


@dataclass
class ForestRanker:
    """Random forest regression of log(time / shape best) on the cost model's features."""

    n_estimators: int = 40
    max_depth: int = 16
    min_samples_leaf: int = 3
    max_rows: int = 150
    n_jobs: int = 2
    name: str = "random_forest"

    def fit(self, shapes: ShapeSet, X: np.ndarray) -> "ForestRanker":
        from sklearn.ensemble import RandomForestRegressor

        idx = sample_rows(shapes, self.max_rows, seed=1, X=X)
        self.forest_ = RandomForestRegressor(
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            max_features=0.5,
            n_jobs=self.n_jobs,
            random_state=0,
        ).fit(X[idx], log_rel_target(shapes.rel[idx]))
        return self

    def cost(self, shapes: ShapeSet, X: np.ndarray) -> np.ndarray:
        return np.where(infeasible(X), np.inf, self.forest_.predict(X))


@dataclass
class NearestShapeRanker:
    """Each candidate scored by its log(time / best) on the nearest training shape that measured it
    (the same distance and neighbour handicap as verify's nearest-shape slot, selector/decide/nearest.py)."""

    neighbours: int = NEIGHBOURS
    name: str = "nearest_shape"

    @staticmethod
    def _shape_vectors(shapes: ShapeSet) -> tuple[np.ndarray, np.ndarray]:
        first = shapes.rows.iloc[shapes.starts]
        v = np.log2(first[["M", "N", "K"]].to_numpy(dtype=np.float64))
        return v, (first["layout"].astype(str) + first["op"].astype(str)).to_numpy()

    def fit(self, shapes: ShapeSet, X: np.ndarray) -> "NearestShapeRanker":
        self.vec_, self.kind_ = self._shape_vectors(shapes)
        y = log_rel_target(shapes.rel)
        keys = shapes.rows["candidate_key"].to_numpy(dtype=str)
        ends = np.r_[shapes.starts[1:], len(keys)]
        self.tables_ = [dict(zip(keys[a:b], y[a:b])) for a, b in zip(shapes.starts, ends)]
        return self

    def cost(self, shapes: ShapeSet, X: np.ndarray) -> np.ndarray:
        vec, kind = self._shape_vectors(shapes)
        keys = shapes.rows["candidate_key"].to_numpy(dtype=str)
        ends = np.r_[shapes.starts[1:], len(keys)]
        fallback = RooflineRanker().cost(shapes, X)
        fallback_rank = np.argsort(np.argsort(fallback, kind="stable"), kind="stable") / max(len(fallback), 1)
        out = np.empty(len(keys))
        for s, (a, b) in enumerate(zip(shapes.starts, ends)):
            d = np.linalg.norm(self.vec_ - vec[s], axis=1) + KIND_PENALTY * (self.kind_ != kind[s])
            near = np.argsort(d, kind="stable")[: self.neighbours]
            for i in range(a, b):
                score = None
                for j, n in enumerate(near):
                    score = self.tables_[n].get(keys[i])
                    if score is not None:
                        score = score + NEIGHBOUR_STEP * j  # farther neighbours count a little less
                        break
                out[i] = score if score is not None else REG_CAP + 1.0 + fallback_rank[i]
        return np.where(infeasible(X), np.inf, out)


def baseline_rankers() -> dict:
    """name -> factory of every learned/analytic baseline (DEFAULT is evaluated separately)."""
    return {"roofline": RooflineRanker, "random_forest": ForestRanker, "nearest_shape": NearestShapeRanker}
