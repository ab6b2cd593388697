"""The cost model: XGBoost trees over the feature schema, saved as JSON, never pickled.

scikit-learn estimator style: hyper-parameters in __init__ (nothing else happens there),
`fit` learns and returns self, learned state ends in `_`, `predict` is pure. The model
answers one question for the selector: which candidates of ONE problem are fastest, so
`predict` returns a cost where lower means predicted faster; for ranking objectives only
its order within a problem means anything.

On disk a model is two files (selector/model/artifact.py, the one schema for every model):
`<name>.json` (the XGBoost booster, XGBoost's own JSON) and `<name>.meta.json` (kind
"cost-model", feature schema, device fingerprint, dataset hash, objective, training command,
metrics; for 'reg:aten' models the nearest-shape template table verify reads,
selector/decide/nearest.py). Loading checks the feature schema always and the device unless
forced (selector/model/checks.py); which shipped model serves a card is selector/model/discovery.py.

Serving needs no xgboost: a loaded JSON model predicts through `forest.TreeEnsemble` (numpy,
bit-identical), and the XGBoost booster is loaded only when something asks for `booster_`
(training, saving, a model TreeEnsemble cannot evaluate).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

import numpy as np

from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError, read_sidecar  # noqa: F401 -- this model's errors and reader
from kselect.selector.model.artifact import sidecar_path as meta_path  # noqa: F401 -- a model file's sidecar
from kselect.selector.model.checks import FeatureSchemaError, check_device, check_schema
from kselect.selector.model.feature_blocks import block_declaration, feature_names
from kselect.selector.model.features import FEATURE_SCHEMA_VERSION

log = logging.getLogger(__name__)

# OpenMP threads that spin while waiting make XGBoost 15-30x slower on a shared 2-core CPU
# (measured: 60 s instead of 4 s for one fit); sleeping waiters cost nothing when idle.
# Must be set before libxgboost loads, i.e. before anything imports xgboost.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

KIND = "cost-model"
# Our objective names -> XGBoost objectives. "reg:log" regresses log(time / shape's best);
# "reg:aten" regresses log(time / ATen's time of the shape), so a score is a predicted gap to
# cuBLAS (< 0: predicted faster) that the policy reads as such (training/learn/train.py).
OBJECTIVES = {
    "rank:pairwise": "rank:pairwise",
    "rank:ndcg": "rank:ndcg",
    "reg:log": "reg:squarederror",
    "reg:aten": "reg:squarederror",
}


class CostModel(artifact.HyperParameters):
    """Gradient-boosted trees ranking GEMM candidates of one problem."""

    def __init__(
        self,
        objective: str = "rank:pairwise",
        n_estimators: int = 300,
        max_depth: int = 8,
        learning_rate: float = 0.1,
        min_child_weight: float = 1.0,
        subsample: float = 0.8,
        colsample_bytree: float = 0.8,
        reg_lambda: float = 1.0,
        max_bin: int = 256,
        nthread: int = 2,
        random_state: int = 0,
        cascade_trees: int = 5,
        cascade_keep: int = 64,
    ):
        self.keep_params(locals())

    @property
    def is_ranking(self) -> bool:
        return self.objective.startswith("rank:")

    @property
    def aten_relative(self) -> bool:
        """True when a prediction is log(time / ATen's time) of the same GEMM."""
        return self.objective == "reg:aten"

    def _xgb_params(self) -> dict:
        if self.objective not in OBJECTIVES:
            raise ModelError(f"unknown objective {self.objective!r}: expected one of {sorted(OBJECTIVES)}")
        params = {
            "objective": OBJECTIVES[self.objective],
            "tree_method": "hist",
            "max_depth": int(self.max_depth),
            "eta": float(self.learning_rate),
            "min_child_weight": float(self.min_child_weight),
            "subsample": float(self.subsample),
            "colsample_bytree": float(self.colsample_bytree),
            "lambda": float(self.reg_lambda),
            "max_bin": int(self.max_bin),
            "nthread": int(self.nthread),
            "seed": int(self.random_state),
            "verbosity": 0,
        }
        if self.objective == "rank:ndcg":
            # relevance levels go up to 31 (2% steps); exponential gain stresses the very top,
            # which held-out top-1 on the H200 data rewarded (81% vs 76% with linear gain)
            params.update(
                {"ndcg_exp_gain": True, "lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 32}
            )
        elif self.objective == "rank:pairwise":
            params.update({"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 8})
        return params

    # -- learning ---------------------------------------------------------------------
    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        qid: np.ndarray | None = None,
        sample_weight: np.ndarray | None = None,
        progress=None,
        feature_blocks: tuple[str, ...] = (),
    ) -> "CostModel":
        """Learn from features X and targets y (relevance for rank:*, log relative time for reg:log).

        qid: the problem each row belongs to (needed by ranking objectives; rows are sorted
        by it here because XGBoost wants each query contiguous). feature_blocks: the optional
        blocks (feature_blocks.FEATURE_BLOCKS) whose columns follow FEATURE_NAMES in X, in order.
        """
        import xgboost as xgb

        self.feature_blocks_ = tuple(feature_blocks)
        names = self.feature_names_
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y, dtype=np.float32)
        self._check_width(X)
        if len(y) != len(X):
            raise ModelError(f"X has {len(X)} rows but y has {len(y)}")
        params = self._xgb_params()
        kwargs = {}
        if self.is_ranking:
            if qid is None:
                raise ModelError(f"objective {self.objective} needs qid (the problem of each row)")
            qid = np.asarray(qid)
            order = np.argsort(qid, kind="stable")
            X, y, qid = X[order], y[order], qid[order]
            if sample_weight is not None:
                raise ModelError("ranking objectives take per-query weights only; pass none")
            kwargs["qid"] = qid
        elif sample_weight is not None:
            kwargs["weight"] = np.asarray(sample_weight, dtype=np.float32)
        dtrain = xgb.DMatrix(X, label=y, feature_names=list(names), nthread=int(self.nthread), **kwargs)
        callbacks = [_Progress(progress, self.n_estimators)] if progress else None
        self.booster_ = xgb.train(params, dtrain, num_boost_round=int(self.n_estimators), callbacks=callbacks)
        self.n_features_in_ = X.shape[1]
        return self

    # -- the trees, from xgboost or from numpy ---------------------------------------------
    @property
    def booster_(self):
        """The XGBoost booster: fitted, or read on first use from the file a loaded model came
        from (serving predicts through `forest_` and never needs it)."""
        booster = self.__dict__.get("_booster")
        if booster is None:
            path = self.__dict__.get("_booster_path")
            if path is None:
                raise AttributeError("booster_")
            booster = self.__dict__["_booster"] = _read_booster(path)
            if self.__dict__.get("_nthread") is not None:
                booster.set_param({"nthread": int(self._nthread)})
        return booster

    @booster_.setter
    def booster_(self, booster) -> None:
        self.__dict__["_booster"] = booster
        self.__dict__.pop("_booster_path", None)
        self.__dict__.pop("forest_", None)  # fitted anew: these trees are not the file's

    @property
    def n_trees(self) -> int:
        """Boosting rounds (without importing xgboost when the model serves through numpy)."""
        forest = self.__dict__.get("forest_")
        return forest.n_iterations if forest is not None else int(self.booster_.num_boosted_rounds())

    def _margin(self, X: np.ndarray, iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        forest = self.__dict__.get("forest_")
        if forest is not None:
            return forest.margin(X, iteration_range)
        if iteration_range is None:
            return self.booster_.inplace_predict(X, validate_features=False)
        return self.booster_.inplace_predict(X, iteration_range=iteration_range, validate_features=False)

    # -- the inputs -------------------------------------------------------------------
    # the optional feature blocks it was trained with (none: FEATURE_NAMES alone, every model
    # made before blocks existed); set by fit and load
    feature_blocks_: tuple[str, ...] = ()

    @property
    def feature_names_(self) -> tuple[str, ...]:
        """Its input columns: FEATURE_NAMES, then its blocks' columns."""
        return feature_names(self.feature_blocks_)

    def _check_width(self, X: np.ndarray) -> None:
        n = len(self.feature_names_)
        if X.ndim != 2 or X.shape[1] != n:
            blocks = f" (with feature blocks {list(self.feature_blocks_)})" if self.feature_blocks_ else ""
            raise FeatureSchemaError(f"X has shape {X.shape}; this model takes {n} features{blocks}")

    # -- using ------------------------------------------------------------------------
    def _check_fitted(self):
        if "forest_" not in self.__dict__ and not hasattr(self, "booster_"):
            raise ModelError("this CostModel is not fitted: call fit() or CostModel.load()")

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Cost of each row (lower = predicted faster); pure, deterministic."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        self._check_width(X)
        raw = self._margin(X)
        return -raw if self.is_ranking else raw

    def selection_cost(self, X: np.ndarray) -> np.ndarray:
        """The cost selection ranks by: +inf for rows that cannot run (never predicted), and a
        two-stage cascade so ~2,400 rows stay within the latency budget: the first
        `cascade_trees` trees score every feasible row, the whole model re-scores the best
        `cascade_keep`; the rest keep their stage-one order behind them. cascade_keep=0 turns
        the cascade off. Evaluation ranks with this very function."""
        from kselect.selector.model.features import infeasible

        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        cost = np.full(len(X), np.inf)
        feasible = np.flatnonzero(~infeasible(X))
        n_trees = self.n_trees
        keep, first = int(self.cascade_keep or 0), int(self.cascade_trees or 0)
        if len(feasible) == 0:
            return cost
        if keep <= 0 or len(feasible) <= keep or first <= 0 or first >= n_trees:
            cost[feasible] = self.predict(X[feasible])
            return cost
        rough = self._margin(X[feasible], (0, first))
        rough = -rough if self.is_ranking else rough
        top = np.argpartition(rough, keep - 1)[:keep]
        fine = self.predict(X[feasible[top]])
        rest = np.ones(len(feasible), dtype=bool)
        rest[top] = False
        # behind every re-scored row, in stage-one order
        cost[feasible[rest]] = fine.max() + 1.0 + (rough[rest] - rough[rest].min())
        cost[feasible[top]] = fine
        return cost

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Row indices from predicted fastest to slowest (stable on ties; infeasible last)."""
        return np.argsort(self.selection_cost(X), kind="stable")

    def rank_candidates(
        self, problem, candidates, device: Mapping | None = None, k: int | None = None, epilogue=None
    ) -> list:
        """Selection path: `candidates` of `problem` from predicted fastest, the first k (all if None).

        `device` is the serving GPU's fingerprint (features use its SM count and peaks);
        it defaults to the training fingerprint, which check_device has matched anyway.
        `epilogue`: the GEMM's Epilogue, read by a model trained with the epilogue block.
        """
        from kselect.selector.model.feature_blocks import with_blocks
        from kselect.selector.model.features import featurize_candidates

        device = device or self.fingerprint
        X = featurize_candidates(problem, candidates, device)
        order = self.rank(with_blocks(X, self.feature_blocks_, candidates, device, epilogue, problem=problem))
        return [candidates[i] for i in (order if k is None else order[:k])]

    def set_threads(self, nthread: int) -> "CostModel":
        """Threads used by predict (selection uses 1 so it never competes with compilation; the
        numpy trees always run on the calling thread)."""
        self._check_fitted()
        self._nthread = int(nthread)
        if self.__dict__.get("_booster") is not None:
            self._booster.set_param({"nthread": int(nthread)})
        return self

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | Path, metadata: Mapping | None = None, kind: str = KIND) -> Path:
        """Write `<path>` (XGBoost JSON) and its `.meta.json` sidecar; returns the sidecar path.
        `kind`: the sidecar's kind (a verify-budget model is saved as "reach-model", model/reach.py)."""
        self._check_fitted()
        path = Path(path)
        if path.suffix not in (".json", ".ubj"):
            raise ModelError(f"model path must end in .json or .ubj, got {path.name!r}")
        import xgboost as xgb

        meta = dict(metadata or {})
        fp = meta.get("fingerprint") or {}
        meta.update(
            {
                **artifact.header(kind, self.feature_names_),
                "feature_schema_version": FEATURE_SCHEMA_VERSION,
                "objective": self.objective,
                "hyper_parameters": self.get_params(),
                "fingerprint_id": fp.get("fingerprint_id"),
                "gpu_name": fp.get("gpu_name"),
                "sm_count": fp.get("sm_count"),
                "xgboost_version": xgb.__version__,
                "booster_file": path.name,
                "n_boosted_rounds": int(self.booster_.num_boosted_rounds()),
            }
        )
        if self.feature_blocks_:  # a model without blocks writes no such field: its sidecar as before
            meta["feature_blocks"] = block_declaration(self.feature_blocks_)
        else:
            meta.pop("feature_blocks", None)
        nearest = getattr(self, "nearest_templates_", None)
        if nearest is not None:  # verify's nearest-shape lookup (selector/decide/nearest.py)
            meta["nearest_templates"] = nearest.to_json()
        mp = artifact.save(self.booster_, path, meta)
        self.metadata_ = meta
        return mp

    @classmethod
    def load(
        cls, path: str | Path, fingerprint: Mapping | None = None, force: bool = False, kind: str = KIND
    ) -> "CostModel":
        """Read a saved model (JSON/UBJ only, no pickle); refuse a schema or device mismatch.
        A JSON model TreeEnsemble evaluates serves without xgboost; any other is read by it.
        `kind`: the sidecar kind expected (the verify-budget model's is "reach-model")."""
        path, meta = artifact.load_sidecar(path, kind)
        blocks = check_schema(meta, source=str(path))
        model = cls.with_params(meta.get("hyper_parameters"))
        model.feature_blocks_ = blocks
        forest = _read_forest(path, len(model.feature_names_))
        if forest is None:
            model.booster_ = _read_booster(path)
        else:
            model.forest_ = forest
            model._booster_path = path
        model.n_features_in_ = len(model.feature_names_)
        model.metadata_ = meta
        model.path_ = path  # where it came from: its verify-budget model sits beside it (model/reach.py)
        if fingerprint is not None:
            model.check_device(fingerprint, force=force)
        return model

    def fingerprint_for(self, device: Mapping | None) -> dict:
        """The training card's fingerprint to featurise `device`'s GEMMs with: the matching card
        of a model trained on several cards' data (their bandwidth and L2 differ), else the
        model's one training fingerprint."""
        from kselect.selector.model.checks import same_card, trained_fingerprints

        meta = getattr(self, "metadata_", {}) or {}
        if device and meta.get("fingerprints"):
            for trained in trained_fingerprints(meta):
                if same_card(trained, device):
                    return trained
        return self.fingerprint

    @property
    def fingerprint(self) -> dict:
        """The fingerprint of the device the model was trained on (from its metadata)."""
        return dict((getattr(self, "metadata_", {}) or {}).get("fingerprint") or {})

    # what this loaded model serves (SCOPES): set by whoever chose it for a device
    device_scope = "card"

    def check_device(self, fingerprint: Mapping, force: bool = False) -> None:
        """Refuse a device this model does not serve: by default another card than the training
        one (GPU name or SM count differ); see `device_scope`."""
        check_device(getattr(self, "metadata_", {}) or {}, fingerprint, force=force, scope=self.device_scope)


def _read_booster(path: Path):
    import xgboost as xgb

    booster = xgb.Booster()
    try:
        booster.load_model(str(path))
    except xgb.core.XGBoostError as exc:
        raise ModelError(f"{path} is not an XGBoost model: {str(exc).splitlines()[0]}") from None
    return booster


def _read_forest(path: Path, n_features: int):
    """The model's trees for numpy (forest.TreeEnsemble), or None where xgboost must read it:
    UBJ, or something TreeEnsemble does not evaluate (said in the debug log). `n_features`: the
    inputs its sidecar declares, which the trees must take."""
    from kselect.selector.model.forest import TreeEnsemble, UnsupportedModel

    if path.suffix != ".json":
        return None
    try:
        forest = TreeEnsemble(artifact.read_model_json(path))
    except UnsupportedModel as exc:
        log.debug("%s: read by xgboost (%s)", path, exc)
        return None
    if forest.n_features != n_features:
        raise FeatureSchemaError(
            f"{path} takes {forest.n_features} features; its sidecar declares "
            f"{n_features}: retrain it with `kselect train`"
        )
    return forest


class _Progress:
    """XGBoost callback that reports rounds to a `progress(done, total)` function."""

    def __new__(cls, fn, total):
        import xgboost as xgb

        class _CB(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                if (epoch + 1) % 25 == 0 or epoch + 1 == total:
                    fn(epoch + 1, total)
                return False

        return _CB()
