"""Whether a cost model may serve here: it was trained on the feature schema this code computes
(`check_schema`) and for this GPU (`check_device`, name and SM count; other software versions are
only logged). Both raise a ModelError subclass naming what differs."""

from __future__ import annotations

import logging
from typing import Mapping

from kselect.selector.model.artifact import ModelError
from kselect.selector.model.features import FEATURE_NAMES, FEATURE_SCHEMA_VERSION

log = logging.getLogger("kselect.selector.model.cost_model")  # where a model's load logs


class FeatureSchemaError(ModelError):
    """The model was trained on another feature schema than this code computes."""


class DeviceMismatchError(ModelError):
    """The model was trained for another GPU than the one it is asked to serve."""


def check_schema(meta: Mapping, source: str = "model") -> None:
    version, names = meta.get("feature_schema_version"), meta.get("feature_names")
    if version != FEATURE_SCHEMA_VERSION or list(names or []) != list(FEATURE_NAMES):
        detail = ""
        if names is not None and list(names) != list(FEATURE_NAMES):
            extra = sorted(set(names) - set(FEATURE_NAMES))
            gone = sorted(set(FEATURE_NAMES) - set(names))
            detail = f" (model-only features {extra[:5]}, missing {gone[:5]}, or a different order)"
        raise FeatureSchemaError(
            f"{source} was trained on feature schema v{version} but this kselect computes "
            f"v{FEATURE_SCHEMA_VERSION}{detail}: retrain it with `kselect train`"
        )


def check_device(meta: Mapping, fingerprint: Mapping, force: bool = False) -> None:
    trained = meta.get("fingerprint") or {}
    want = {
        "gpu_name": trained.get("gpu_name", meta.get("gpu_name")),
        "sm_count": trained.get("sm_count", meta.get("sm_count")),
    }
    have = {"gpu_name": fingerprint.get("gpu_name"), "sm_count": fingerprint.get("sm_count")}
    diff = [k for k in want if str(want[k]) != str(have[k])]
    if not diff:
        if trained.get("fingerprint_id") and trained.get("fingerprint_id") != fingerprint.get("fingerprint_id"):
            log.info(
                "model fingerprint %s != device %s (same GPU; software versions differ)",
                trained.get("fingerprint_id"),
                fingerprint.get("fingerprint_id"),
            )
        return
    msg = (
        f"model was trained on {want['gpu_name']} ({want['sm_count']} SMs, fingerprint "
        f"{trained.get('fingerprint_id', meta.get('fingerprint_id'))}) but this device is "
        f"{have['gpu_name']} ({have['sm_count']} SMs, fingerprint {fingerprint.get('fingerprint_id')}); "
        f"differs in {diff}"
    )
    if force:
        log.warning("%s -- used anyway (force=True)", msg)
        return
    raise DeviceMismatchError(msg + ": train a model for this device or pass force=True")
