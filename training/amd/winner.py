"""Which GEMM backend wins a shape on an AMD GPU, learned from AMD's own tuned tables.

ROCm/aiter ships exhaustively tuned bf16 GEMM tables: for every (GPU, M, N, K, flags) it
records only the winning backend (flydsl, asm, torch = hipBLASLt, triton, opus, skinny) and
that winner's time. This module turns a directory of such tables into a multi-class
classifier and measures it honestly: leave-one-table-out (each table is one model's shapes,
so holding a table out asks "does this transfer to a new network?") against two baselines
that need no learning (per-arch majority and nearest shape).

Sections, each one concern: table loading and validation; features (inputs only, never the
outcome columns); near-tie sets (label noise); the estimator; baselines; metrics;
leave-one-table-out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError

KIND = "amd-backend-winner"
SCHEMA_VERSION = artifact.KINDS[KIND]

# Per-row columns that describe the problem: the only ones features may read.
INPUT_COLUMNS = ("gfx", "cu_num", "M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")
LABEL_COLUMN = "libtype"  # the winning backend: the target
TIME_COLUMN = "us"  # the winner's measured time: used only to judge near-ties
# Outcomes of tuning: never features (they would leak the answer).
OUTCOME_COLUMNS = ("libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw")
REQUIRED_COLUMNS = INPUT_COLUMNS + (LABEL_COLUMN, TIME_COLUMN)
FLAG_COLUMNS = ("bias", "scaleAB", "bpreshuffle")
# A table's problems of one weight matrix: same GPU, N, K and flags, varying M.
SERIES_COLUMNS = ("gfx", "cu_num", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")

KNOWN_ARCHS = ("gfx942", "gfx950", "gfx1250")
DTYPE_BYTES = {
    "torch.bfloat16": 2,
    "torch.float16": 2,
    "torch.float32": 4,
    "torch.float8_e4m3fnuz": 1,
    "torch.float8_e4m3fn": 1,
}
# Output tiles typical of the backends' kernels (skinny/flydsl 16x64 .. asm/hipBLASLt 256x256).
TILES = ((16, 64), (32, 64), (64, 64), (80, 64), (128, 128), (256, 128), (256, 256))


class TableError(ValueError):
    """A tuned-GEMM table (or directory of them) that cannot be used; names the file."""


class ModelFileError(ModelError):
    """A saved model or its sidecar that cannot be loaded; names the file."""


# ----------------------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------------------


def file_sha256(path: str | Path) -> str:
    """Content hash, so a model card pins exactly which tables trained the model."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _as_bool(series: pd.Series, path: Path, column: str) -> pd.Series:
    if series.dtype == bool:
        return series
    text = series.astype(str).str.strip().str.lower()
    mapping = {"true": True, "false": False, "1": True, "0": False}
    bad = ~text.isin(list(mapping))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TableError(f"{path}: column {column!r} row {row + 2} is {series.iloc[row]!r}, expected True/False")
    return text.map(mapping).astype(bool)


def load_table(path: str | Path) -> pd.DataFrame:
    """One table, validated: every problem of a bad file is reported with the file's name."""
    path = Path(path)
    if not path.is_file():
        raise TableError(f"{path}: no such table file")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError as exc:
        raise TableError(f"{path}: empty table ({exc})") from exc
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TableError(f"{path}: not a readable CSV table ({exc})") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise TableError(
            f"{path}: missing column(s) {', '.join(missing)}; a tuned-GEMM table needs {', '.join(REQUIRED_COLUMNS)}"
        )
    if frame.empty:
        raise TableError(f"{path}: table has a header but no rows")
    for column in ("cu_num", "M", "N", "K"):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | (values <= 0) | (values != values.round())
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TableError(
                f"{path}: column {column!r} row {row + 2} is {frame[column].iloc[row]!r}, expected a positive integer"
            )
        frame[column] = values.astype(np.int64)
    times = pd.to_numeric(frame[TIME_COLUMN], errors="coerce")
    if (times.isna() | (times < 0)).any():  # 0 is the tables' own "not timed" marker
        row = int(np.flatnonzero((times.isna() | (times < 0)).to_numpy())[0])
        raise TableError(
            f"{path}: column {TIME_COLUMN!r} row {row + 2} is "
            f"{frame[TIME_COLUMN].iloc[row]!r}, expected a time in us (>= 0)"
        )
    frame[TIME_COLUMN] = times.astype(float)
    for column in ("gfx", "dtype", "outdtype", LABEL_COLUMN):
        if frame[column].isna().any():
            row = int(np.flatnonzero(frame[column].isna().to_numpy())[0])
            raise TableError(f"{path}: column {column!r} row {row + 2} is empty")
        frame[column] = frame[column].astype(str).str.strip()
    for column in FLAG_COLUMNS:
        frame[column] = _as_bool(frame[column], path, column)
    frame["table"] = path.name
    return frame


def table_files(directory: str | Path) -> list[Path]:
    """The *.csv tables of a directory, sorted; an error if there are none."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TableError(f"{directory}: tables directory does not exist")
    files = sorted(p for p in directory.glob("*.csv") if p.is_file())
    if not files:
        raise TableError(f"{directory}: no tuned-GEMM tables (*.csv) in this directory")
    return files


def load_tables(directory: str | Path, measured_only: bool = True) -> pd.DataFrame:
    """All tables of a directory in one frame, with a `table` column naming each row's file.

    measured_only drops rows whose winner time is 0: aiter writes those as untuned defaults
    (all are gfx1250 `triton auto` rows in the shipped tables), so their label was never
    measured and their time cannot bound anything.
    """
    frames = [load_table(p) for p in table_files(directory)]
    frame = pd.concat(frames, ignore_index=True)
    if measured_only:
        frame = frame[frame[TIME_COLUMN] > 0].reset_index(drop=True)
        if frame.empty:
            raise TableError(f"{directory}: no measured rows (every {TIME_COLUMN!r} is 0)")
    return frame


# ----------------------------------------------------------------------------------------
# Features: functions of INPUT_COLUMNS only
# ----------------------------------------------------------------------------------------


def _arch_number(arch: str) -> float:
    """gfx942 -> 942, gfx1250 -> 1250: a numeric handle that also orders unseen archs."""
    digits = "".join(ch for ch in str(arch) if ch.isdigit())
    return float(int(digits)) if digits else 0.0


def _trailing_zero_bits(values: np.ndarray, cap: int = 9) -> np.ndarray:
    """How many times 2 divides a size (capped): alignment decides which kernels apply."""
    out = np.zeros(values.shape, dtype=float)
    for p in range(1, cap + 1):
        out += (values % (2**p)) == 0
    return out


def features(frame: pd.DataFrame) -> pd.DataFrame:
    """Engineered features of each problem. Reads INPUT_COLUMNS only, never outcomes."""
    missing = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if missing:
        raise TableError(f"problems lack input column(s) {', '.join(missing)}")
    m, n, k = (frame[c].to_numpy(dtype=float) for c in ("M", "N", "K"))
    cu = frame["cu_num"].to_numpy(dtype=float)
    in_bytes = frame["dtype"].map(DTYPE_BYTES).fillna(2).to_numpy(dtype=float)
    out_bytes = frame["outdtype"].map(DTYPE_BYTES).fillna(2).to_numpy(dtype=float)
    f: dict[str, np.ndarray] = {}
    for arch in KNOWN_ARCHS:
        f[f"arch_{arch}"] = (frame["gfx"] == arch).to_numpy(dtype=float)
    f["arch_number"] = frame["gfx"].map(_arch_number).to_numpy(dtype=float)
    f["cu_num"] = cu
    for flag in FLAG_COLUMNS:
        f[flag] = frame[flag].astype(bool).to_numpy(dtype=float)
    f["in_bytes"], f["out_bytes"] = in_bytes, out_bytes
    lm, ln, lk = np.log2(m), np.log2(n), np.log2(k)
    f.update(
        log_m=lm,
        log_n=ln,
        log_k=lk,
        log_mn=lm + ln,
        log_mk=lm + lk,
        log_nk=ln + lk,
        log_mnk=lm + ln + lk,
        log_m_over_n=lm - ln,
        log_m_over_k=lm - lk,
        log_n_over_k=ln - lk,
        log_mnk_per_cu=lm + ln + lk - np.log2(cu),
    )
    moved = in_bytes * (m * k + n * k) + out_bytes * m * n
    f["log_bytes"] = np.log2(moved)
    f["log_intensity"] = np.log2(2 * m * n * k / moved)  # flop per byte: memory vs compute
    for tm, tn in TILES:
        tiles = np.ceil(m / tm) * np.ceil(n / tn)
        waves = np.ceil(tiles / cu)
        f[f"log_tiles_{tm}x{tn}"] = np.log2(tiles)
        f[f"waves_{tm}x{tn}"] = tiles / cu
        f[f"wave_eff_{tm}x{tn}"] = tiles / (waves * cu)  # last-wave occupancy
    for name, values in (("m", m), ("n", n), ("k", k)):
        f[f"pow2_{name}"] = _trailing_zero_bits(values)
    for limit in (1, 8, 16, 32, 64, 256):
        f[f"m_le_{limit}"] = (m <= limit).astype(float)
    return pd.DataFrame(f, index=frame.index)


# ----------------------------------------------------------------------------------------
# Label noise: near-tie sets from the winners' own times
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# Training set recipe (label-noise handling lives here, not in the estimator)
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# The estimator
# ----------------------------------------------------------------------------------------


class BackendWinnerClassifier(artifact.HyperParameters):
    """XGBoost multi:softprob over engineered shape features; scikit-learn style.

    X is a frame of problems with INPUT_COLUMNS (extra columns are ignored, so a whole
    table may be passed); y the winning backend names. n_jobs defaults to 1: on a busy
    2-core machine OpenMP threads spin against each other and 2 threads ran 3x slower.
    Defaults: the candidate that grouped-by-table CV over all shipped tables picks from
    NESTED_GRID (60 rounds; 150 rounds came second). Every variant tried landed within
    63.5-67% held-out top-1 (see reports/2026-12-02-amd-backend-winner/README.md).
    """

    def __init__(
        self,
        n_estimators: int = 60,
        max_depth: int = 4,
        learning_rate: float = 0.1,
        subsample: float = 1.0,
        colsample_bytree: float = 0.6,
        min_child_weight: float = 1.0,
        reg_lambda: float = 5.0,
        max_bin: int = 64,
        n_jobs: int = 1,
        random_state: int = 0,
    ):
        self.keep_params(locals())

    def _xgb_params(self, num_class: int) -> dict:
        return {
            "objective": "multi:softprob",
            "num_class": num_class,
            "eval_metric": "mlogloss",
            "tree_method": "hist",
            "max_depth": self.max_depth,
            "eta": self.learning_rate,
            "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree,
            "min_child_weight": self.min_child_weight,
            "lambda": self.reg_lambda,
            "max_bin": self.max_bin,
            "nthread": self.n_jobs,
            "seed": self.random_state,
        }

    def fit(self, X: pd.DataFrame, y: Sequence[str], sample_weight=None):
        import xgboost as xgb

        y = np.asarray(y).astype(str)
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"training rows need at least two different winning backends, got only {list(classes)}")
        feats = features(X)
        codes = np.searchsorted(classes, y)
        data = xgb.DMatrix(
            feats.to_numpy(dtype=float), label=codes, weight=sample_weight, feature_names=list(feats.columns)
        )
        self.booster_ = xgb.train(self._xgb_params(len(classes)), data, num_boost_round=self.n_estimators)
        self.classes_ = classes
        self.feature_names_ = list(feats.columns)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "booster_"):
            raise ValueError("model is not fitted: call fit() or load() first")

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        import xgboost as xgb

        self._check_fitted()
        feats = features(X)
        if list(feats.columns) != self.feature_names_:
            raise ModelFileError(
                "model was trained on other features than this code computes "
                f"({len(self.feature_names_)} vs {feats.shape[1]})"
            )
        data = xgb.DMatrix(feats.to_numpy(dtype=float), feature_names=self.feature_names_)
        return self.booster_.predict(data).reshape(len(X), len(self.classes_))

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    # -- persistence: XGBoost JSON + JSON sidecar, never pickle --------------------------

    @staticmethod
    def paths(stem_or_file: str | Path) -> tuple[Path, Path]:
        """models/x or models/x.json -> (models/x.json, models/x.meta.json) (artifact.paths)."""
        return artifact.paths(stem_or_file)

    def save(self, stem_or_file: str | Path, extra: dict | None = None) -> tuple[Path, Path]:
        self._check_fitted()
        model_path, _ = self.paths(stem_or_file)
        meta = {
            **artifact.header(KIND, self.feature_names_),
            "classes": [str(c) for c in self.classes_],
            "params": self.get_params(),
            **(extra or {}),
        }
        return model_path, artifact.save(self.booster_, model_path, meta)

    @classmethod
    def load(cls, stem_or_file: str | Path) -> "BackendWinnerClassifier":
        """A saved model (artifact.load_sidecar's checks; ModelFileError names the file)."""
        import xgboost as xgb

        try:
            model_path, meta = artifact.load_sidecar(stem_or_file, KIND, required=("classes", "params"))
        except ModelError as exc:
            raise ModelFileError(str(exc)) from None
        model = cls.with_params(meta["params"])
        booster = xgb.Booster()
        try:
            booster.load_model(str(model_path))
        except xgb.core.XGBoostError as exc:
            raise ModelFileError(f"{model_path}: not an XGBoost JSON model ({exc})") from exc
        model.booster_ = booster
        model.classes_ = np.asarray(meta["classes"])
        model.feature_names_ = list(meta["feature_names"])
        model.meta_ = meta
        return model


def train(frame: pd.DataFrame, recipe: Recipe = Recipe(), **params) -> BackendWinnerClassifier:
    """Fit a classifier on labelled tables following the label-noise recipe."""
    X, y, w = training_rows(frame, recipe)
    return BackendWinnerClassifier(**params).fit(X, y, sample_weight=w)


# ----------------------------------------------------------------------------------------
# Baselines: same fit/scores interface, no learning
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# Metrics
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------


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


def plot_confusion(result: dict, path: str | Path, title: str) -> Path:
    """Confusion matrix as a PNG (Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = np.asarray(result["confusion"])
    labels = result["labels"]
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.imshow(cm, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted backend")
    ax.set_ylabel("recorded winner")
    ax.set_title(title)
    top = cm.max() if cm.size else 0
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            ax.text(
                j,
                i,
                str(cm[i, j]),
                ha="center",
                va="center",
                color="white" if cm[i, j] > top / 2 else "black",
                fontsize=8,
            )
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
