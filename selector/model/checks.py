"""Whether a cost model may serve here: it was trained on the feature schema this code computes
(`check_schema`, with the optional feature blocks its sidecar declares) and for a device it may
serve (`check_device`: by default the training card, by name and SM count, other software
versions only logged; or any card of its `architecture`, or any card, as the loader's scope says).
Both raise a ModelError subclass naming what differs."""

from __future__ import annotations

import logging
from typing import Mapping

from kselect.selector.model.artifact import ModelError
from kselect.selector.model.feature_blocks import FEATURE_BLOCKS, feature_names
from kselect.selector.model.features import FEATURE_SCHEMA_VERSION
from kselect.selector.model.held_ops import HeldOpsError, check_held_ops

log = logging.getLogger("kselect.selector.model.cost_model")  # where a model's load logs


class FeatureSchemaError(ModelError):
    """The model was trained on another feature schema than this code computes."""


class DeviceMismatchError(ModelError):
    """The model was trained for another GPU than the one it is asked to serve."""


def declared_blocks(meta: Mapping, source: str = "model") -> tuple[str, ...]:
    """The optional feature blocks (feature_blocks.FEATURE_BLOCKS) a sidecar says its model was trained
    with, in column order: `feature_blocks`, a list of {"name", "version"}; none when absent (every
    model made before blocks existed). A block this code does not know, or another version of
    one, is a FeatureSchemaError: the model cannot be fed what it was trained on."""
    declared = meta.get("feature_blocks", [])
    if not isinstance(declared, list) or not all(isinstance(b, Mapping) for b in declared):
        raise FeatureSchemaError(f"{source}: feature_blocks must be a list of {{name, version}}, got {declared!r}")
    names = []
    for block in declared:
        name, version = block.get("name"), block.get("version")
        if name not in FEATURE_BLOCKS:
            raise FeatureSchemaError(
                f"{source} was trained with feature block {name!r}, which this kselect does not compute "
                f"(known: {sorted(FEATURE_BLOCKS)}): retrain it with `kselect train`"
            )
        if version != FEATURE_BLOCKS[name][0]:
            raise FeatureSchemaError(
                f"{source} was trained with feature block {name!r} v{version} but this kselect computes "
                f"v{FEATURE_BLOCKS[name][0]}: retrain it with `kselect train`"
            )
        names.append(name)
    if len(set(names)) != len(names):
        raise FeatureSchemaError(f"{source}: feature block declared twice in {names}")
    return tuple(names)


def check_schema(meta: Mapping, source: str = "model") -> tuple[str, ...]:
    """Refuse a model trained on other features than this code computes, or holding an op it
    cannot serve (held_ops.py) (FeatureSchemaError);
    returns the optional blocks it declares (declared_blocks)."""
    blocks = declared_blocks(meta, source)
    try:  # the ops it says it holds: scaled_mm only with the scaled_mm block's columns
        check_held_ops(meta, blocks, source)
    except HeldOpsError as exc:
        raise FeatureSchemaError(str(exc)) from None
    expected = feature_names(blocks)
    version, names = meta.get("feature_schema_version"), meta.get("feature_names")
    if version != FEATURE_SCHEMA_VERSION or list(names or []) != list(expected):
        detail = ""
        if names is not None and list(names) != list(expected):
            extra = sorted(set(names) - set(expected))
            gone = sorted(set(expected) - set(names))
            detail = f" (model-only features {extra[:5]}, missing {gone[:5]}, or a different order)"
        raise FeatureSchemaError(
            f"{source} was trained on feature schema v{version} but this kselect computes "
            f"v{FEATURE_SCHEMA_VERSION}{detail}: retrain it with `kselect train`"
        )
    return blocks


def architecture(fingerprint: Mapping) -> str | None:
    """The GPU architecture a fingerprint names: "sm_90" from a CUDA compute capability, the gfx
    target on ROCm (its feature suffixes dropped), None when it names neither."""
    if fingerprint.get("hip_version"):
        arch = str(fingerprint.get("gcn_arch") or "").split(":")[0]
        return arch or None
    cc = fingerprint.get("compute_capability")
    return f"sm_{str(cc).replace('.', '')}" if cc else None


def trained_fingerprints(meta: Mapping) -> list[dict]:
    """The fingerprints of every card a model was trained on: `fingerprints` for a model of
    several cards' data (`kselect train --data A --data B`), else its one `fingerprint`."""
    many = [dict(f) for f in meta.get("fingerprints") or [] if isinstance(f, Mapping)]
    if many:
        return many
    one = dict(meta.get("fingerprint") or {})
    one.setdefault("gpu_name", meta.get("gpu_name"))
    one.setdefault("sm_count", meta.get("sm_count"))
    return [one]


def same_card(trained: Mapping, fingerprint: Mapping) -> bool:
    """Same GPU name and SM count: what makes a training card this card."""
    return all(str(trained.get(k)) == str(fingerprint.get(k)) for k in ("gpu_name", "sm_count"))


def device_match(meta: Mapping, fingerprint: Mapping) -> str | None:
    """How a model's training cards relate to this one: "card" (one of them is this GPU: same
    name and SM count), "architecture" (another card of the same architecture), else None."""
    cards = trained_fingerprints(meta)
    if any(same_card(t, fingerprint) for t in cards):
        return "card"
    here = architecture(fingerprint)
    if here is not None and any(architecture(t) == here for t in cards):
        return "architecture"
    return None


# what a loaded model may serve: the card it was trained on, any card of its architecture
# (discovery found no model of this card), or any card (the user named it: one warning)
SCOPES = ("card", "architecture", "any")


def check_device(meta: Mapping, fingerprint: Mapping, force: bool = False, scope: str = "card") -> None:
    match = device_match(meta, fingerprint)
    trained = next((t for t in trained_fingerprints(meta) if same_card(t, fingerprint)), None)
    trained = trained or meta.get("fingerprint") or {}
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
    if scope == "any" or (scope == "architecture" and match == "architecture"):
        return  # the loader said why, once (load_shipped's info line, the selector's warning)
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
