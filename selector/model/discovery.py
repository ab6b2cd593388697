"""Which cost model serves a card: the shipped models (`shipped_models`), the one discovery picks
for a fingerprint (`load_shipped`: this exact card's model first, else one of its architecture,
with one info line naming it), and a model the user named, which serves any card with one
warning when it was made for another (`serve_named`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError, read_sidecar
from kselect.selector.model.artifact import sidecar_path as meta_path
from kselect.selector.model.checks import (
    DeviceMismatchError,
    architecture,
    check_schema,
    device_match,
    trained_fingerprints,
)
from kselect.selector.model.cost_model import KIND, CostModel

log = logging.getLogger("kselect.selector.model.cost_model")  # where a model's load logs


def shipped_models() -> list[Path]:
    """Cost-model booster files shipped in kselect.models (artifact.discover)."""
    return artifact.discover(KIND)


def serve_named(model: CostModel, fingerprint: Mapping, name: object) -> str | None:
    """Let a model the user named serve this device; returns the warning to give when it was
    trained on another card (None when on this one). The user's choice stands: the model
    serves, and the warning says which card it was made for."""
    match = device_match(getattr(model, "metadata_", {}) or {}, fingerprint)
    if match == "card" or not fingerprint.get("gpu_name"):
        return None
    model.device_scope = "any"
    trained = model.fingerprint
    return (
        f"kselect: model {name} was trained on {trained.get('gpu_name')} ({trained.get('sm_count')} SMs, "
        f"{architecture(trained) or 'unknown architecture'}) but this device is {fingerprint.get('gpu_name')} "
        f"({fingerprint.get('sm_count')} SMs, {architecture(fingerprint) or 'unknown architecture'}); "
        "it ranks here because you named it"
    )


def _preference(match: str, n_cards: int) -> tuple[int, int]:
    """Lower serves first: a model of this card alone, then one of several cards among them
    this one, then (no model of this card) one of several cards of its architecture -- it has
    seen more than one card's clocks and memory -- then one of a single other card."""
    if match == "card":
        return (0, 0 if n_cards == 1 else 1)
    return (1, 0 if n_cards > 1 else 1)


def load_shipped(name: str | None = None, fingerprint: Mapping | None = None, force: bool = False) -> CostModel:
    """A shipped model by file name, or (name=None) the one to serve `fingerprint`'s GPU: a model
    of this exact card first, else one of its architecture (`_preference`); one info line names
    the model and why. Raises DeviceMismatchError when neither exists."""
    from kselect.models import shipped_model_path

    if name is not None:
        return CostModel.load(shipped_model_path(name), fingerprint=fingerprint, force=force)
    if fingerprint is None:
        raise ModelError("load_shipped needs a model name or a device fingerprint")
    ranked = []
    for path in shipped_models():
        meta = read_sidecar(meta_path(path))
        try:
            check_schema(meta, source=str(path))
        except ModelError:
            continue
        match = device_match(meta, fingerprint)
        if match is not None:
            ranked.append((_preference(match, len(trained_fingerprints(meta))), path.name, path, match))
    if ranked:
        _, _, path, scope = min(ranked)
        model = CostModel.load(path)
        model.device_scope = scope
        model.check_device(fingerprint)
        cards = ", ".join(t.get("gpu_name") or "?" for t in trained_fingerprints(model.metadata_))
        why = "this card" if scope == "card" else "the same architecture"
        log.info(
            "kselect: serving model %s (trained on %s; %s)", path.name, cards, why + f" {architecture(fingerprint)}"
        )
        return model
    raise DeviceMismatchError(
        f"no shipped model for {fingerprint.get('gpu_name')} ({fingerprint.get('sm_count')} SMs, "
        f"{architecture(fingerprint) or 'unknown architecture'}); shipped: {[p.name for p in shipped_models()]}"
    )
