"""The grouped-GEMM model on disk and at serving: XGBoost trees over the grouped feature schema
(grouped_features.py), predicting each candidate's log2(time / ATen's time) for one
`_grouped_mm`, saved as the one artifact format (artifact.py: `<name>.json` + `<name>.meta.json`,
kind "grouped-cost-model") and evaluated with numpy (forest.TreeEnsemble), never unpickled.

Its sidecar holds, besides artifact.header's fields, `ops` (["grouped_mm"]: what it decides),
`grouped_feature_schema_version` (checked at load: another version is a FeatureSchemaError),
`dtypes`, `backends`, the training card's fields and the `fingerprint` of the card it was
measured on. Serving (`grouped_model_for`) takes a grouped model of this card (or, failing that,
of its architecture) from the folder of the serving cost model; the ranker that uses it is
selector/decide/grouped_ranker.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from kselect.kernels.op_names import GROUPED_MM
from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError
from kselect.selector.model.checks import FeatureSchemaError, device_match
from kselect.selector.model.grouped_features import GROUPED_FEATURE_NAMES, GROUPED_FEATURE_SCHEMA_VERSION

KIND = "grouped-cost-model"
OPS = (GROUPED_MM,)
OBJECTIVE = "reg:aten-log2"  # log2(time / ATen's time of the same problem)


def grouped_sidecar(feature_meta: Mapping, fingerprint: Mapping, **provenance) -> dict:
    """A grouped model's sidecar: artifact.header of this kind plus the fields serving checks."""
    return {
        **artifact.header(KIND, GROUPED_FEATURE_NAMES, fingerprint=dict(fingerprint), **provenance),
        "grouped_feature_schema_version": GROUPED_FEATURE_SCHEMA_VERSION,
        "objective": OBJECTIVE,
        "ops": list(OPS),
        **feature_meta,
    }


def check_grouped_schema(meta: Mapping, source: str = "grouped model") -> None:
    """FeatureSchemaError naming `source` unless the sidecar's grouped feature schema (version
    and column names) is the one this code computes, and it holds grouped_mm."""
    version, names = meta.get("grouped_feature_schema_version"), meta.get("feature_names")
    if version != GROUPED_FEATURE_SCHEMA_VERSION or list(names or []) != list(GROUPED_FEATURE_NAMES):
        raise FeatureSchemaError(
            f"{source} was trained on grouped feature schema v{version} but this kselect computes "
            f"v{GROUPED_FEATURE_SCHEMA_VERSION}: retrain it with `kselect grouped-eval --out`"
        )
    ops = meta.get("ops")
    if isinstance(ops, str) or not isinstance(ops, list) or GROUPED_MM not in ops or not set(ops) <= set(OPS):
        raise FeatureSchemaError(f"{source}: ops {ops!r} must hold 'grouped_mm' and nothing else")


class GroupedCostModel:
    """A loaded grouped model: its sidecar (`metadata_`) and trees (`forest_`, numpy only)."""

    def __init__(self, forest, metadata: Mapping, path: Path | None = None):
        self.forest_ = forest
        self.metadata_ = dict(metadata)
        self.path = path

    @classmethod
    def load(cls, path: str | Path) -> "GroupedCostModel":
        """Read and check a saved grouped model (ModelError / FeatureSchemaError naming the file).
        Only a JSON model the numpy trees evaluate serves: the runtime never imports xgboost."""
        from kselect.selector.model.forest import TreeEnsemble, UnsupportedModel

        model_path, meta = artifact.load_sidecar(path, KIND)
        check_grouped_schema(meta, source=str(model_path))
        if model_path.suffix != ".json":
            raise ModelError(f"{model_path}: a grouped model serves from XGBoost JSON only")
        try:
            forest = TreeEnsemble(artifact.read_model_json(model_path))
        except UnsupportedModel as exc:
            raise ModelError(f"{model_path}: {exc}") from None
        if forest.n_features != len(GROUPED_FEATURE_NAMES):
            raise FeatureSchemaError(
                f"{model_path} takes {forest.n_features} features; the grouped schema has {len(GROUPED_FEATURE_NAMES)}"
            )
        return cls(forest, meta, model_path)

    @property
    def fingerprint(self) -> dict:
        return dict(self.metadata_.get("fingerprint") or {})

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(self.metadata_.get("dtypes") or ("bf16",))

    @property
    def backends(self) -> frozenset:
        return frozenset(self.metadata_.get("backends") or ("aten", "triton"))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted log2(time / ATen's time) per row."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != len(GROUPED_FEATURE_NAMES):
            raise FeatureSchemaError(f"X has shape {X.shape}; the grouped model takes {len(GROUPED_FEATURE_NAMES)}")
        return np.asarray(self.forest_.margin(X), dtype=np.float64)


def grouped_model_for(fingerprint: Mapping, directory: str | Path | None = None) -> Path | None:
    """The grouped model in `directory` (default the shipped models/) to serve this card: one of
    this card first, else one of its architecture; None where there is none. Sidecars of this
    kind are listed whatever their schema version: a stale one is loaded, and refused by name."""
    ranked = []
    for path in artifact.discover(KIND, directory=directory):
        match = device_match(artifact.read_sidecar(artifact.sidecar_path(path)), fingerprint)
        if match is not None:
            ranked.append((match != "card", path.name, path))
    return min(ranked)[2] if ranked else None
