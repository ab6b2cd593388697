"""Training the cost model: targets, row sampling, objective + hyper-parameter choice by CV.

Targets are relative to each shape's best measured time, because the selector only ever
compares candidates of one shape: a ranking objective gets relevance levels in 2% steps
(31 = within 2% of the best, 0 = >= 1.8x slower or failed); regression ('reg:log') fits
log(time / best), failures at log(8). Within a shape, rows near the best are all kept and
the rest sampled, so oracle shapes (~2,400 rows) do not drown sampled ones (~250 rows) and
retraining fits in the 2-core / 5-minute budget.

Objective and hyper-parameters are chosen by cross-validation over shape groups (GroupKFold
on model family when there are enough families, else on shape), scored on held-out
geometric-mean % of oracle at k=1 and k=4.

'reg:aten' (the headroom recipe) fits log(time / ATen's time of the shape) instead, clipped to
[ATEN_GAP_MIN, ATEN_GAP_MAX] (failures at the top): the selector reads a score as the predicted
gap to cuBLAS. It trains on the shapes Inductor autotunes as measured (training/learn/headroom.py:
not M = 1, not N or K it pads), on every row within ATEN_NEAR of ATen's time plus a
FAR_FRACTION sample of the rest, each row weighted by its shape's headroom (1 + HEADROOM_WEIGHT
x log(t_ATen / t_best) / 0.05), so the shapes where a template beats cuBLAS dominate the fit.
Held out by family this captured 0.84 of the headroom at ATen + 4 templates (0.85-0.90 over
other row samples) against 0.80 for the rank:ndcg recipe (reports/2026-12-05-headroom-h200-bf16).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from kselect.selector.model.cost_model import OBJECTIVES, CostModel
from kselect.selector.model.features import infeasible
from kselect.selector.model.held_ops import DEFAULT_OPS
from kselect.training.data.dataset import RETIMED_DIR
from kselect.training.learn.pooled import Devices, featurize_rows
from kselect.training.learn.ranking_metrics import KS, ShapeSet, evaluate_costs, folds, held_out_costs

REL_STEP = 1.02
REL_LEVELS = 31
REG_CAP = np.log(8.0)
KEEP_REL = 1.3
MAX_ROWS_PER_SHAPE = 320
AUTO_OBJECTIVES = ("rank:pairwise", "rank:ndcg", "reg:log")
# Small on purpose: every entry costs one fit per CV fold on a 2-core CPU.
# Trees x depth also sets the ranking cost at selection time (~2,400 rows must take < 5 ms).
DEFAULT_GRID = (
    {"max_depth": 6, "learning_rate": 0.15, "n_estimators": 160, "min_child_weight": 1.0},
    {"max_depth": 8, "learning_rate": 0.15, "n_estimators": 120, "min_child_weight": 4.0},
    {"max_depth": 7, "learning_rate": 0.1, "n_estimators": 240, "min_child_weight": 2.0},
)
SELECTION_KS = (1, 4)
# the headroom recipe ('reg:aten'); see the module docstring
ATEN_GAP_MIN, ATEN_GAP_MAX = -0.6, 0.3
ATEN_NEAR = 1.3
FAR_FRACTION = 0.3
HEADROOM_WEIGHT = 3.0
# 30 trees pre-screen every row for the cascade: with 5 (the ranking recipe's) the held-out capture
# at ATen + 4 fell from 0.84 to 0.81; from 30 on it equals all trees on every row at k <= 4
HEADROOM_GRID = (
    {"max_depth": 5, "learning_rate": 0.1, "n_estimators": 300, "min_child_weight": 2.0, "cascade_trees": 30},
)


class TrainingError(ValueError):
    """Training input that cannot produce a model; the message says why."""


def relevance(rel: np.ndarray) -> np.ndarray:
    """Relevance level from time / shape best: 31 within 2%, one level less per 2% more."""
    steps = np.floor(np.log(np.where(np.isfinite(rel), rel, 1e9)) / np.log(REL_STEP) + 1e-9)
    return np.clip(REL_LEVELS - steps, 0, REL_LEVELS).astype(np.float32)


def log_rel_target(rel: np.ndarray) -> np.ndarray:
    return np.minimum(np.log(np.where(np.isfinite(rel), rel, np.inf)), REG_CAP).astype(np.float32)


def sample_rows(
    shapes: ShapeSet,
    max_rows: int = MAX_ROWS_PER_SHAPE,
    keep_rel: float = KEEP_REL,
    seed: int = 0,
    X: np.ndarray | None = None,
) -> np.ndarray:
    """Row indices for training: every row within `keep_rel` of its shape's best, plus a
    random sample of the rest up to `max_rows` per shape (deterministic for a seed).
    Given X, infeasible rows (shared memory; see features.infeasible) are left out:
    selection never ranks them."""
    rng = np.random.default_rng(seed)
    rel = shapes.rel
    near = rel <= keep_rel
    feasible = ~infeasible(X) if X is not None else np.ones(len(rel), dtype=bool)
    u = rng.random(len(rel))
    counts = np.bincount(shapes.sid, minlength=shapes.n_shapes)
    near_counts = np.bincount(shapes.sid, weights=near, minlength=shapes.n_shapes)
    budget = np.maximum(max_rows - near_counts, 0)
    far_counts = np.maximum(counts - near_counts, 1)
    keep_prob = np.minimum(1.0, budget / far_counts)[shapes.sid]
    return np.flatnonzero(feasible & (near | (u < keep_prob)))


def aten_gap_target(shapes: ShapeSet, idx: np.ndarray, gap_max: float = ATEN_GAP_MAX) -> np.ndarray:
    """log(time / ATen's time of the row's shape), clipped to [ATEN_GAP_MIN, gap_max]; failed
    rows at the top. A higher `gap_max` is the verify-budget model's target (selector/model/reach.py)."""
    gap = np.log(shapes.time[idx] / shapes.aten_time[shapes.sid[idx]])
    return np.clip(np.where(np.isfinite(gap), gap, gap_max), ATEN_GAP_MIN, gap_max).astype(np.float32)


def headroom_weights(shapes: ShapeSet, idx: np.ndarray) -> np.ndarray:
    """Per row: 1 + HEADROOM_WEIGHT x its shape's log(t_ATen / t_best) / 0.05."""
    room = np.log(shapes.aten_time / shapes.best)[shapes.sid[idx]]
    return (1.0 + HEADROOM_WEIGHT * room / 0.05).astype(np.float32)


def sample_rows_aten(shapes: ShapeSet, X: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """Training rows of the headroom recipe: the shapes Inductor autotunes as measured; in each,
    every row within ATEN_NEAR of ATen's time and a FAR_FRACTION sample of the rest (feasible
    rows only, as sample_rows)."""
    from kselect.training.learn.headroom import shape_table

    rng = np.random.default_rng(seed)
    decided = ~shape_table(shapes)["decision_free"]
    gap = shapes.time / shapes.aten_time[shapes.sid]
    feasible = ~infeasible(X) if X is not None else np.ones(len(gap), dtype=bool)
    near = gap <= ATEN_NEAR
    keep = feasible & decided[shapes.sid] & (near | (rng.random(len(gap)) < FAR_FRACTION))
    if not keep.any():
        raise TrainingError("no shape Inductor autotunes as measured (all have M = 1 or a padded N/K)")
    return np.flatnonzero(keep)


def training_rows(shapes: ShapeSet, X: np.ndarray, objective: str, max_rows: int, seed: int = 0) -> np.ndarray:
    """The rows an objective trains on (sample_rows, or sample_rows_aten for 'reg:aten')."""
    if objective == "reg:aten":
        return sample_rows_aten(shapes, X, seed)
    return sample_rows(shapes, max_rows, X=X, seed=seed)


@dataclass
class ModelRanker:
    """A CostModel with given hyper-parameters, trained on a ShapeSet (the CV unit); `blocks`:
    the optional feature blocks whose columns follow FEATURE_NAMES in X."""

    params: dict = field(default_factory=dict)
    max_rows: int = MAX_ROWS_PER_SHAPE
    progress: Callable | None = None
    blocks: tuple = ()
    aten_gap_max: float = ATEN_GAP_MAX  # 'reg:aten': the target's clip

    def fit(self, shapes: ShapeSet, X: np.ndarray) -> "ModelRanker":
        idx = training_rows(shapes, X, self.params.get("objective", ""), self.max_rows)
        self.model_ = fit_model(shapes, X, idx, self.params, self.progress, self.blocks, self.aten_gap_max)
        return self

    def cost(self, shapes: ShapeSet, X: np.ndarray) -> np.ndarray:
        return per_shape_selection_cost(self.model_, shapes.sid, X)

    def raw_cost(self, X: np.ndarray) -> np.ndarray:
        return self.model_.predict(X)


def per_shape_selection_cost(model: CostModel, sid: np.ndarray, X: np.ndarray) -> np.ndarray:
    """model.selection_cost applied to each shape's rows on their own, as the selector ranks one
    GEMM's candidates at a time (its cascade keeps the best rows OF A SHAPE for the full model;
    over many shapes at once it would keep the best rows of the whole set)."""
    cost = np.full(len(X), np.nan)
    order = np.argsort(sid, kind="stable")
    bounds = np.flatnonzero(np.diff(sid[order])) + 1
    for rows in np.split(order, bounds):
        if len(rows):
            cost[rows] = model.selection_cost(X[rows])
    return cost


def fit_model(
    shapes: ShapeSet,
    X: np.ndarray,
    idx: np.ndarray,
    params: dict,
    progress: Callable | None = None,
    blocks: tuple = (),
    aten_gap_max: float = ATEN_GAP_MAX,
) -> CostModel:
    """A CostModel of `params` fitted on rows `idx` to its objective's target ('reg:aten': the
    gap to ATen clipped at `aten_gap_max`)."""
    model = CostModel(**params)
    if model.aten_relative:
        return model.fit(
            X[idx],
            aten_gap_target(shapes, idx, aten_gap_max),
            sample_weight=headroom_weights(shapes, idx),
            progress=progress,
            feature_blocks=blocks,
        )
    rel = shapes.rel[idx]
    if model.is_ranking:
        return model.fit(X[idx], relevance(rel), qid=shapes.sid[idx], progress=progress, feature_blocks=blocks)
    return model.fit(X[idx], log_rel_target(rel), progress=progress, feature_blocks=blocks)


def dataset_hash(data_dir: str | Path) -> str:
    """sha256 of the committed measurements file (or of the parquet file given), followed by
    its re-timed labels' file (retimed/measurements.parquet), its record of ATen's kernels
    (aten_kernels.jsonl, the ATen-kernel columns) and its GEMM + epilogue labels
    (epilogue_labels.jsonl) when it has them."""
    from kselect.training.data.aten_kernels import FILE_NAME as ATEN_KERNELS
    from kselect.training.data.epilogue_rows import FILE_NAME as EPILOGUE_LABELS

    p = Path(data_dir)
    f = p if p.is_file() else p / "measurements.parquet"
    if not f.exists():
        return "unknown"
    h = hashlib.sha256()
    again = [] if p.is_file() else [p / RETIMED_DIR / "measurements.parquet", p / ATEN_KERNELS, p / EPILOGUE_LABELS]
    for path in [f] + [a for a in again if a.exists()]:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def cv_groups_scheme(shapes: ShapeSet, n_folds: int) -> str:
    """GroupKFold over model families when there are at least `n_folds`, else over shapes."""
    return "family-kfold" if len(np.unique(shapes.family)) >= n_folds else "shape"


def cv_score(metrics: dict) -> float:
    g = metrics["all"]["pct_oracle_geomean"]
    return float(np.mean([g[k] for k in SELECTION_KS]))


def _cv_row(shapes, X, params, hp, scheme, n_folds, log, max_rows, tick=None, blocks=()) -> dict:
    t0 = time.perf_counter()
    make = lambda: ModelRanker(params, max_rows, blocks=blocks)  # noqa: E731
    cost = held_out_costs(shapes, X, make, scheme, n_folds, progress=tick)
    m = evaluate_costs(shapes, cost, KS)
    row = {
        "objective": params["objective"],
        **hp,
        "scheme": scheme,
        "score": cv_score(m),
        "pct_oracle_geomean": m["all"]["pct_oracle_geomean"],
        "top1": m["all"]["top1"],
        "regret_p99": m["all"]["regret_p99"],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    log(
        f"  cv {row['objective']:<14} {hp}  k=1 {row['pct_oracle_geomean'][1]:.4f}  "
        f"k=4 {row['pct_oracle_geomean'][4]:.4f}  top1 {row['top1']:.3f}  ({row['seconds']} s)"
    )
    return row


def select(
    shapes: ShapeSet,
    X: np.ndarray,
    objectives,
    grid,
    n_folds: int,
    base: dict,
    log: Callable = print,
    max_rows: int = MAX_ROWS_PER_SHAPE,
    progress: Callable[[str, int, int], None] | None = None,
    blocks: tuple = (),
) -> tuple[dict, list[dict]]:
    """Two stages, to fit the time budget: every objective with grid[0], then the winning
    objective with the rest of the grid. Returns (winning params, CV table). `progress`
    hears ("cross-validation fits", done, total), one fit per fold and setting; `blocks`: X's
    optional feature blocks."""
    scheme = cv_groups_scheme(shapes, n_folds)
    splits = len(folds(shapes, scheme, n_folds))
    settings = len(objectives) + len(grid) - 1

    def row(params, hp):
        before = len(table) * splits
        tick = (
            (lambda done, _: progress("cross-validation fits", before + done, settings * splits)) if progress else None
        )
        return _cv_row(shapes, X, params, hp, scheme, n_folds, log, max_rows, tick, blocks)

    table: list[dict] = []
    for obj in objectives:
        table.append(row({**base, **grid[0], "objective": obj}, grid[0]))
    winner = max(table, key=lambda r: r["score"])["objective"]
    for hp in grid[1:]:
        table.append(row({**base, **hp, "objective": winner}, hp))
    best = max(table, key=lambda r: r["score"])
    params = {**base, **{k: best[k] for k in grid[0]}, "objective": best["objective"]}
    return params, table


def train(
    df,
    fingerprint: dict,
    objective: str = "auto",
    cv_folds: int = 5,
    grid=DEFAULT_GRID,
    nthread: int = 2,
    max_rows: int = MAX_ROWS_PER_SHAPE,
    log: Callable = print,
    progress: Callable[[str, int, int], None] | None = None,
    blocks: tuple = (),
) -> tuple[CostModel, dict]:
    """Choose objective + hyper-parameters by CV, refit on all rows; returns (model, card data).
    `fingerprint`: the card's, or the Devices of a pooled frame (training/learn/pooled.py).
    `progress` hears (loop, done, total) for the cross-validation's fits and the final
    fit's boosting rounds; without it the rounds go to `log`. `blocks`: the optional feature
    blocks (feature_blocks.FEATURE_BLOCKS) appended to every row's features, which the model's
    sidecar then declares; the epilogue block reads the rows' `epilogue` column
    (training/data/epilogue_rows.py; a row without one has no epilogue)."""
    if objective != "auto" and objective not in OBJECTIVES:
        raise TrainingError(f"unknown objective {objective!r}: expected auto or one of {sorted(OBJECTIVES)}")
    t_start = time.perf_counter()
    shapes = ShapeSet.from_frame(df)
    if shapes.n_shapes < 2:
        raise TrainingError(f"need at least 2 shapes with ok measurements, have {shapes.n_shapes}")
    log(
        f"{len(shapes.rows)} rows, {shapes.n_shapes} shapes ({int(shapes.oracle.sum())} oracle), "
        f"{len(np.unique(shapes.family))} families; featurising ..."
    )
    blocks = tuple(blocks)
    X = featurize_rows(shapes.rows, fingerprint, blocks)
    objectives = AUTO_OBJECTIVES if objective == "auto" else (objective,)
    base = {"nthread": nthread, "subsample": 0.8, "colsample_bytree": 0.8}
    max_rows = int(max_rows)
    table: list[dict] = []
    if cv_folds and cv_folds >= 2 and (len(objectives) > 1 or len(grid) > 1):
        log(
            f"cross-validating {len(objectives)} objective(s), then {len(grid) - 1} more setting(s) "
            f"of the best, {cv_folds} folds by {cv_groups_scheme(shapes, cv_folds)} ..."
        )
        params, table = select(shapes, X, objectives, list(grid), cv_folds, base, log, max_rows, progress, blocks)
    else:
        params = {**base, **grid[0], "objective": objectives[0]}
    log(f"fitting final model: {params}")
    idx = training_rows(shapes, X, params["objective"], max_rows)
    rounds = (
        (lambda d, t: progress("final fit, boosting rounds", d, t))
        if progress
        else (lambda d, t: log(f"  round {d}/{t}"))
    )
    model = fit_model(shapes, X, idx, params, progress=rounds, blocks=blocks)
    if model.aten_relative:  # verify's nearest-shape slot reads it (selector/decide/nearest.py)
        from kselect.training.learn.nearest_table import nearest_table

        model.nearest_templates_ = nearest_table(shapes)
    seconds = time.perf_counter() - t_start
    card = {
        "cv_table": table,
        "cv_scheme": cv_groups_scheme(shapes, cv_folds) if table else None,
        "train_rows": int(len(idx)),
        "dataset_rows": int(len(shapes.rows)),
        "shapes": int(shapes.n_shapes),
        "max_rows_per_shape": max_rows,
        "oracle_shapes": int(shapes.oracle.sum()),
        "families": sorted(map(str, np.unique(shapes.family))),
        "train_seconds": round(seconds, 1),
        # what the model has seen: the selector never trusts its scores for other backends
        "backends": sorted(map(str, np.unique(shapes.rows["backend"].astype(str)))),
        "selection_metric": f"mean held-out geomean % of oracle at k in {SELECTION_KS}",
    }
    dtypes = sorted(map(str, np.unique(shapes.rows["dtype"].astype(str))))
    if dtypes != ["bf16"]:  # the dtypes the selector lets it decide (bf16 alone when unsaid)
        card["dtypes"] = dtypes
    card.update(held_ops_card(shapes.rows, blocks, log))
    if blocks:  # and how many of its shapes are GEMMs with an epilogue (epilogue_rows.label_rows)
        card["feature_blocks"] = list(blocks)
        from kselect.training.data.epilogue_rows import KEY_MARK

        card["epilogue_shapes"] = int(sum(KEY_MARK in str(k) for k in shapes.keys))
    if isinstance(fingerprint, Devices):  # a pooled model: the cards whose rows it learnt from
        card["cards"] = {fid: str(fp.get("gpu_name")) for fid, fp in fingerprint.fingerprints.items()}
    if table:
        card["objective_reason"] = objective_reason(table)
    log(f"trained in {seconds:.1f} s")
    return model, card


def held_ops_card(rows, blocks, log=print) -> dict:
    """The card's `ops` and `scalings` (selector/model/held_ops.py): written only where the rows
    hold fp8 scaled_mm and the scaled_mm block gives it its columns; without the block such a
    model holds the default ops (a sidecar claiming scaled_mm without it is refused at load)."""
    ops = set(map(str, np.unique(rows["op"].astype(str))))
    if "scaled_mm" not in ops:
        return {}
    if "scaled_mm" not in blocks:
        log("scaled_mm rows without --feature-block scaled_mm: the model will not rank scaled_mm")
        return {}
    scaled = rows[rows["op"].astype(str) == "scaled_mm"]
    return {
        "ops": sorted(ops | set(DEFAULT_OPS)),
        "scalings": sorted(map(str, np.unique(scaled["scaling"].astype(str)))),
    }


def objective_reason(table: list[dict]) -> str:
    """One sentence: how the kept objective compared with the best run of each other one."""
    best_of = {}
    for r in table:
        if r["objective"] not in best_of or r["score"] > best_of[r["objective"]]["score"]:
            best_of[r["objective"]] = r
    ranked = sorted(best_of.values(), key=lambda r: -r["score"])
    win = ranked[0]
    parts = [
        f"{r['objective']} {100 * r['pct_oracle_geomean'][1]:.2f}% / {100 * r['pct_oracle_geomean'][4]:.2f}%"
        for r in ranked
    ]
    return (
        "Held-out geomean % of oracle at k=1 / k=4: "
        + ", ".join(parts)
        + f". {win['objective']} wins on the mean of the two."
    )
