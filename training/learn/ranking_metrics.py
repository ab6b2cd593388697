"""Held-out evaluation of candidate rankers: the metrics, the shape table, cross-validation.

A ranker gives every measured row of a shape a cost (lower = predicted faster). "Taking
the predicted top-k" means benchmarking those k and keeping the fastest, so the outcome at
k is the best measured time among them. Metrics (per shape, then summarised):

- oracle: the best measured ok time of the shape (on `oracle` shapes the full EXHAUSTIVE +
  persistent-TMA + decompose-k space was measured; elsewhere only a sample was);
- pct of oracle at k = oracle / outcome(k) (1.0 = found the best); summarised as the
  geometric mean and low percentiles over shapes;
- regret at k = outcome(k) / oracle - 1, p50/p95/p99/max;
- top-1 = the first pick is within 2% of the oracle; recall@k = some pick of the top k is;
- when every pick of the top k failed to compile/run, the outcome falls back to ATen (the
  selector always can) and the case is counted in `all_failed`;
- DEFAULT = what stock max-autotune DEFAULT benchmarks: ATen + triton_space(p, 'default');
  its outcome is the best measured among them, whatever k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.stats import gmean

from kselect.selector.model.features import TEMPLATE_CLASSES, frame_arrays
from kselect.training.data.dataset import row_problem

KS = (1, 2, 4, 8, 16)
TIE = 1.02
CONFUSION_CLASSES = ("aten", "mm", "persistent_tma", "decompose_k", "other")


class EvaluationError(ValueError):
    """Data that cannot be evaluated; the message says what is missing."""


@dataclass
class ShapeSet:
    """Dataset rows grouped by shape (rows sorted so each shape is one contiguous block)."""

    rows: pd.DataFrame
    sid: np.ndarray  # shape index of each row
    starts: np.ndarray  # first row of each shape
    keys: np.ndarray  # problem_key of each shape
    family: np.ndarray  # model family of each shape (a shape belongs to exactly one)
    oracle: np.ndarray  # bool: full space measured
    time: np.ndarray  # per row ms, inf for failures
    best: np.ndarray  # per shape best ok ms
    tmpl: np.ndarray  # per row template class index into TEMPLATE_CLASSES
    is_default: np.ndarray  # per row: stock DEFAULT would benchmark it
    aten_time: np.ndarray  # per shape, inf if ATen failed / absent
    default_count: np.ndarray  # per shape: DEFAULT candidates measured (ATen + Triton default)
    list_count: np.ndarray  # per shape: DEFAULT list size by this torch's triton_space (+ ATen)
    dropped: int = 0  # shapes without any ok row

    @property
    def n_shapes(self) -> int:
        return len(self.keys)

    @property
    def rel(self) -> np.ndarray:
        return self.time / self.best[self.sid]

    @classmethod
    def from_frame(cls, df: pd.DataFrame, default_keys: Callable | None = None) -> "ShapeSet":
        if len(df) == 0:
            raise EvaluationError("no rows to evaluate")
        ok = (df["status"] == "ok") & np.isfinite(df["time_ms"].to_numpy(dtype=float)) & (df["time_ms"] > 0)
        good = set(df.loc[ok, "problem_key"].unique())
        dropped = df["problem_key"].nunique() - len(good)
        df = (
            df[df["problem_key"].isin(good)]
            .sort_values(["problem_key", "candidate_key"], kind="stable")
            .reset_index(drop=True)
        )
        if len(df) == 0:
            raise EvaluationError("no shape has a single ok measurement")
        keys, sid = np.unique(df["problem_key"].to_numpy(dtype=str), return_inverse=True)
        starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
        ok = ((df["status"] == "ok") & (df["time_ms"] > 0)).to_numpy()
        time = np.where(ok, df["time_ms"].to_numpy(dtype=float), np.inf)
        best = np.minimum.reduceat(time, starts)
        first = df.iloc[starts]
        family = first["model"].replace("", "unknown").to_numpy(dtype=str)
        oracle = df.groupby("problem_key", sort=True)["oracle"].any().to_numpy()
        _, cand = frame_arrays(df)
        tmpl = cand["template_code"]
        is_aten = tmpl == TEMPLATE_CLASSES.index("aten")
        aten_time = np.minimum.reduceat(np.where(is_aten, time, np.inf), starts)
        keyset = default_keys or default_candidate_keys
        is_default = np.zeros(len(df), dtype=bool)
        list_count = np.zeros(len(keys), dtype=np.int64)
        cand_keys = df["candidate_key"].to_numpy(dtype=str)
        ends = np.r_[starts[1:], len(df)]
        for s, (a, b) in enumerate(zip(starts, ends)):
            wanted = keyset(first.iloc[s])
            list_count[s] = len(wanted) + 1  # + ATen
            is_default[a:b] = np.isin(cand_keys[a:b], list(wanted)) | is_aten[a:b]
        default_count = np.add.reduceat(is_default.astype(np.int64), starts)
        return cls(
            df,
            sid,
            starts,
            keys,
            family,
            oracle,
            time,
            best,
            tmpl,
            is_default,
            aten_time,
            default_count,
            list_count,
            dropped,
        )

    def subset(self, shape_mask: np.ndarray) -> "ShapeSet":
        """The shapes where `shape_mask` is True (rows follow)."""
        row_mask = shape_mask[self.sid]
        idx = np.flatnonzero(row_mask)
        new_sid_of = np.cumsum(shape_mask) - 1
        sid = new_sid_of[self.sid[idx]]
        starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]]) if len(sid) else np.zeros(0, int)
        return ShapeSet(
            self.rows.iloc[idx].reset_index(drop=True),
            sid,
            starts,
            self.keys[shape_mask],
            self.family[shape_mask],
            self.oracle[shape_mask],
            self.time[idx],
            self.best[shape_mask],
            self.tmpl[idx],
            self.is_default[idx],
            self.aten_time[shape_mask],
            self.default_count[shape_mask],
            self.list_count[shape_mask],
            0,
        )


def default_candidate_keys(row) -> set[str]:
    """Triton candidate keys stock DEFAULT builds for the shape of dataset row `row`."""
    from kselect.kernels.triton.space import triton_space

    return {c.key for c in triton_space(row_problem(row), "default")}


# ---------------------------------------------------------------------------------------
# metrics
def outcomes(shapes: ShapeSet, cost: np.ndarray, ks: Iterable[int] = KS) -> dict:
    """Per shape: best measured time among the predicted top-k, and the top-1's template."""
    cost = np.asarray(cost, dtype=np.float64)
    if cost.shape != shapes.time.shape:
        raise EvaluationError(f"cost has {cost.shape} entries; the rows number {shapes.time.shape}")
    cost = np.where(np.isnan(cost), np.inf, cost)  # -inf stays: 'benchmark this first'
    order = np.lexsort((cost, shapes.sid))  # by shape, then by cost; stable on ties
    rank = np.arange(len(order)) - shapes.starts[shapes.sid[order]]
    t_sorted = shapes.time[order]
    out = {"time": {}, "all_failed": {}}
    for k in ks:
        t_k = np.minimum.reduceat(np.where(rank < k, t_sorted, np.inf), shapes.starts)
        failed = ~np.isfinite(t_k)
        out["all_failed"][k] = failed
        out["time"][k] = np.where(failed, shapes.aten_time, t_k)
    out["top1_template"] = shapes.tmpl[order[shapes.starts]]
    return out


def summarize_pct(pct: np.ndarray) -> dict:
    pct = np.asarray(pct, dtype=np.float64)
    safe = np.maximum(pct, 1e-12)
    return {
        "geomean": float(gmean(safe)) if len(pct) else float("nan"),
        "p1": float(np.percentile(pct, 1)) if len(pct) else float("nan"),
        "p5": float(np.percentile(pct, 5)) if len(pct) else float("nan"),
        "min": float(pct.min()) if len(pct) else float("nan"),
    }


def metrics_from_times(
    shapes: ShapeSet, times: dict, top1_template: np.ndarray | None = None, all_failed: dict | None = None
) -> dict:
    """Summary metrics from per-shape outcome times keyed by k."""
    best = shapes.best
    default_t = default_outcome_times(shapes)
    m: dict = {
        "shapes": int(shapes.n_shapes),
        "oracle_shapes": int(shapes.oracle.sum()),
        "pct_oracle_geomean": {},
        "pct_oracle_p1": {},
        "pct_oracle_min": {},
        "recall": {},
        "regret_p50": {},
        "regret_p95": {},
        "regret_p99": {},
        "regret_max": {},
        "default_beats_ours": {},
        "all_failed": {},
    }
    for k, t in times.items():
        pct = np.where(np.isfinite(t), best / t, 0.0)
        regret = np.where(np.isfinite(t), t / best - 1.0, np.inf)
        s = summarize_pct(pct)
        m["pct_oracle_geomean"][k] = s["geomean"]
        m["pct_oracle_p1"][k] = s["p1"]
        m["pct_oracle_min"][k] = s["min"]
        m["recall"][k] = float(np.mean(t <= TIE * best))
        for q in (50, 95, 99):
            m[f"regret_p{q}"][k] = float(np.percentile(regret, q))
        m["regret_max"][k] = float(regret.max())
        m["default_beats_ours"][k] = float(np.mean(default_t * TIE < t))
        m["all_failed"][k] = int(all_failed[k].sum()) if all_failed is not None else 0
    if times:
        k1 = min(times)
        m["top1"] = float(np.mean(times[k1] <= TIE * best))
    if top1_template is not None:
        m["template_confusion"] = template_confusion(shapes, top1_template)
    return m


def evaluate_costs(shapes: ShapeSet, cost: np.ndarray, ks: Iterable[int] = KS) -> dict:
    """All metrics of one ranker's costs, for all shapes and for oracle shapes only."""
    o = outcomes(shapes, cost, ks)
    res = {"all": metrics_from_times(shapes, o["time"], o["top1_template"], o["all_failed"])}
    if shapes.oracle.any():
        mask = shapes.oracle
        sub = shapes.subset(mask)
        res["oracle"] = metrics_from_times(
            sub,
            {k: v[mask] for k, v in o["time"].items()},
            o["top1_template"][mask],
            {k: v[mask] for k, v in o["all_failed"].items()},
        )
    return res


def template_confusion(shapes: ShapeSet, top1_template: np.ndarray) -> dict:
    """counts[oracle's template][our top-1's template] over shapes."""
    order = np.lexsort((shapes.time, shapes.sid))
    best_tmpl = shapes.tmpl[order[shapes.starts]]
    table = {a: {b: 0 for b in CONFUSION_CLASSES} for a in CONFUSION_CLASSES}
    for t, p in zip(best_tmpl, top1_template):
        table[TEMPLATE_CLASSES[t]][TEMPLATE_CLASSES[p]] += 1
    return table


def default_outcome_times(shapes: ShapeSet) -> np.ndarray:
    """Per shape: best measured among the stock DEFAULT list (ATen + Triton default)."""
    t = np.minimum.reduceat(np.where(shapes.is_default, shapes.time, np.inf), shapes.starts)
    return np.where(np.isfinite(t), t, shapes.aten_time)


def default_metrics(shapes: ShapeSet) -> dict:
    """Stock DEFAULT's outcome: one number per metric (it benchmarks its whole list)."""
    t = default_outcome_times(shapes)

    def one(mask):
        sub_best, sub_t = shapes.best[mask], t[mask]
        pct = np.where(np.isfinite(sub_t), sub_best / sub_t, 0.0)
        s = summarize_pct(pct)
        regret = sub_t / sub_best - 1
        return {
            "shapes": int(mask.sum()),
            "pct_oracle_geomean": s["geomean"],
            "pct_oracle_p1": s["p1"],
            "pct_oracle_min": s["min"],
            "top1": float(np.mean(sub_t <= TIE * sub_best)),
            "regret_p50": float(np.percentile(regret, 50)),
            "regret_p95": float(np.percentile(regret, 95)),
            "regret_p99": float(np.percentile(regret, 99)),
            "regret_max": float(regret.max()),
            "candidates_median": float(np.median(shapes.default_count[mask])),
            "candidates_max": int(shapes.default_count[mask].max()),
            "list_size_median": float(np.median(shapes.list_count[mask])),
            "measured_of_list_min_fraction": float(np.min(shapes.default_count[mask] / shapes.list_count[mask])),
            "aten_only_fraction": float(np.mean(t[mask] == shapes.aten_time[mask])),
        }

    res = {"all": one(np.ones(shapes.n_shapes, dtype=bool))}
    if shapes.oracle.any():
        res["oracle"] = one(shapes.oracle)
    return res


# ---------------------------------------------------------------------------------------
# cross-validation
def folds(shapes: ShapeSet, scheme: str, n_folds: int = 5, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """(name, test-shape mask) per fold. 'shape': GroupKFold by shape; 'family': leave one
    model family out; 'family-kfold': GroupKFold over families (several per fold).
    A shape is in exactly one test fold, so no shape leaks."""
    n = shapes.n_shapes
    if scheme == "shape":
        if n < 2:
            raise EvaluationError(f"need at least 2 shapes for cross-validation, have {n}")
        k = min(n_folds, n)
        perm = np.random.default_rng(seed).permutation(n)
        fold_of = np.empty(n, dtype=np.int64)
        fold_of[perm] = np.arange(n) % k
        return [(f"shape-fold-{i}", fold_of == i) for i in range(k)]
    if scheme == "family-kfold":
        from sklearn.model_selection import GroupKFold

        k = min(n_folds, len(np.unique(shapes.family)))
        if k < 2:
            raise EvaluationError("family GroupKFold needs >= 2 model families")
        split = GroupKFold(n_splits=k).split(np.zeros(n), groups=shapes.family)
        out = []
        for i, (_, test_idx) in enumerate(split):
            mask = np.zeros(n, dtype=bool)
            mask[test_idx] = True
            out.append((f"family-fold-{i}", mask))
        return out
    if scheme == "family":
        fams = np.unique(shapes.family)
        if len(fams) < 2:
            raise EvaluationError(f"leave-one-family-out needs >= 2 model families, have {list(fams)}")
        return [(f"family={f}", shapes.family == f) for f in fams]
    raise EvaluationError(f"unknown CV scheme {scheme!r}: expected 'shape', 'family' or 'family-kfold'")


def held_out_costs(
    shapes: ShapeSet,
    X: np.ndarray,
    make_ranker: Callable,
    scheme: str,
    n_folds: int = 5,
    progress: Callable[[int, int], None] | None = None,
    raw_out: np.ndarray | None = None,
) -> np.ndarray:
    """Cost of every row from a ranker that never saw the row's shape (retrained per fold).
    Rankers with `raw_cost` (the model's plain prediction) also fill `raw_out`; `progress`
    hears (folds done, folds) after each fold."""
    splits = [(name, ~test, test) for name, test in folds(shapes, scheme, n_folds)]
    return split_costs(shapes, X, make_ranker, splits, progress, raw_out)


def split_costs(
    shapes: ShapeSet,
    X: np.ndarray,
    make_ranker: Callable,
    splits: Sequence[tuple[str, np.ndarray, np.ndarray]],
    progress: Callable[[int, int], None] | None = None,
    raw_out: np.ndarray | None = None,
) -> np.ndarray:
    """Cost of the rows of each split's test shapes from a ranker fitted on its training shapes:
    `splits` holds (name, training-shape mask, test-shape mask); the test masks must not overlap
    and a split's training shapes must not include its test shapes. Rows of shapes in no test
    mask stay NaN. `raw_out` and `progress` as held_out_costs."""
    cost = np.full(len(shapes.time), np.nan)
    tested = np.zeros(shapes.n_shapes, dtype=bool)
    for i, (name, train, test) in enumerate(splits):
        if (train & test).any():
            raise EvaluationError(f"split {name!r} trains on {int((train & test).sum())} of the shapes it tests")
        if (tested & test).any():
            raise EvaluationError(f"split {name!r} tests shapes an earlier split tested")
        tested |= test
        ranker = make_ranker().fit(shapes.subset(train), X[train[shapes.sid]])
        test_rows = test[shapes.sid]
        cost[test_rows] = ranker.cost(shapes.subset(test), X[test_rows])
        if raw_out is not None and hasattr(ranker, "raw_cost"):
            raw_out[test_rows] = ranker.raw_cost(X[test_rows])
        if progress:
            progress(i + 1, len(splits))
    return cost
