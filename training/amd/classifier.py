"""The backend-winner estimator: XGBoost over the engineered features, saved as XGBoost JSON
plus a JSON sidecar (never pickle)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError
from kselect.training.amd.features import features
from kselect.training.amd.recipe import Recipe, training_rows

KIND = "amd-backend-winner"
SCHEMA_VERSION = artifact.KINDS[KIND]


class ModelFileError(ModelError):
    """A saved model or its sidecar that cannot be loaded; names the file."""


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
