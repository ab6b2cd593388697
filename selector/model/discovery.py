"""Which cost model serves a card: the shipped models (`shipped_models`), the one discovery picks
for a fingerprint (`load_shipped`: this exact card's model first, else one of its architecture,
with one info line naming it), the card's models of the dtypes that one lacks (`dtype_models`,
joined to it), and a model the user named, which serves any card with one
warning when it was made for another (`serve_named`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from kselect.kernels.op_names import GROUPED_MM
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
from kselect.selector.model.held_ops import held_dtypes

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


def _ranked(fingerprint: Mapping) -> list[tuple]:
    """(preference, file name, path, match, dtypes held) of each shipped model that may serve
    `fingerprint`'s GPU (its schema this code's), best first."""
    ranked = []
    for path in shipped_models():
        meta = read_sidecar(meta_path(path))
        try:
            check_schema(meta, source=str(path))
        except ModelError:
            continue
        match = device_match(meta, fingerprint)
        if match is not None:
            pref = _preference(match, len(trained_fingerprints(meta)))
            ranked.append((pref, path.name, path, match, held_dtypes(meta)))
    return sorted(ranked)


def _serving(ranked: list[tuple]) -> tuple:
    """The entry of `_ranked` that serves the card: one that decides bf16 before one of other
    dtypes alone (those join it), then by preference and file name."""
    return min(ranked, key=lambda r: ("bf16" not in r[4], r[0], r[1]))


def _loaded(path: Path, scope: str, fingerprint: Mapping, serves: str) -> CostModel:
    model = CostModel.load(path)
    model.device_scope = scope
    model.check_device(fingerprint)
    cards = ", ".join(t.get("gpu_name") or "?" for t in trained_fingerprints(model.metadata_))
    why = "this card" if scope == "card" else "the same architecture"
    log.info(
        "kselect: serving model %s%s (trained on %s; %s %s)", path.name, serves, cards, why, architecture(fingerprint)
    )
    return model


def load_shipped(name: str | None = None, fingerprint: Mapping | None = None, force: bool = False) -> CostModel:
    """A shipped model by file name, or (name=None) the one to serve `fingerprint`'s GPU: a model
    of this exact card first, else one of its architecture (`_preference`), one that decides
    bf16 before one of other dtypes alone (those join it: dtype_models); one info line names
    the model and why. Raises DeviceMismatchError when none exists."""
    from kselect.models import shipped_model_path

    if name is not None:
        return CostModel.load(shipped_model_path(name), fingerprint=fingerprint, force=force)
    if fingerprint is None:
        raise ModelError("load_shipped needs a model name or a device fingerprint")
    ranked = _ranked(fingerprint)
    if ranked:
        _, _, path, scope, _ = _serving(ranked)
        return _loaded(path, scope, fingerprint, "")
    raise DeviceMismatchError(
        f"no shipped model for {fingerprint.get('gpu_name')} ({fingerprint.get('sm_count')} SMs, "
        f"{architecture(fingerprint) or 'unknown architecture'}); shipped: {[p.name for p in shipped_models()]}"
    )


def dtype_models(fingerprint: Mapping, held) -> dict[str, CostModel]:
    """{dtype: model} for the dtypes the serving model (which decides `held`) lacks: per dtype the
    shipped model that may serve this GPU and decides it, preferred as load_shipped prefers;
    each file loaded once. Raises ModelError for a model that cannot be read."""
    chosen: dict[str, tuple] = {}
    for _, _, path, scope, dtypes in _ranked(fingerprint):
        for d in dtypes:
            if d not in held:
                chosen.setdefault(d, (path, scope))
    loaded: dict[Path, CostModel] = {}
    for d, (path, scope) in chosen.items():
        if path not in loaded:
            loaded[path] = _loaded(
                path, scope, fingerprint, f" for {', '.join(sorted(k for k, v in chosen.items() if v[0] == path))}"
            )
    return {d: loaded[path] for d, (path, _) in chosen.items()}


class Holdings:
    """What the ranker that would serve a card decides, read from sidecars alone (no trees
    loaded, nothing warmed): the op gate's question for an op kselect decides only where a model
    holds it. Attributes as a ranker's: `ops`, `scalings`, `dtypes`, and `grouped` (the grouped
    model's dtypes, as an object with `dtypes`, or None)."""

    def __init__(self, meta: Mapping, dtypes, grouped_dtypes):
        from types import SimpleNamespace

        from kselect.selector.model.held_ops import held_ops, held_scalings

        self.ops, self.scalings = held_ops(meta), held_scalings(meta)
        self.dtypes = tuple(dtypes)
        self.grouped = None if grouped_dtypes is None else SimpleNamespace(dtypes=tuple(grouped_dtypes))
        if self.grouped is not None:
            self.ops = self.ops | {GROUPED_MM}


def serving_holdings(fingerprint: Mapping, meta: Mapping | None = None, grouped_dir: str | Path | None = None):
    """Holdings of the model that would serve `fingerprint`: the one whose sidecar is `meta` (a
    model the user gave or named), else the shipped one load_shipped picks, the card's models of
    other dtypes joined; with the grouped model for the card in `grouped_dir` (default the
    shipped models/). None where no model may serve this card. Raises ModelError for a sidecar
    that cannot be read."""
    from kselect.selector.model.grouped_model import grouped_model_for

    if meta is not None:
        check_schema(meta, source="the model you named")  # one it could not serve holds nothing here
        dtypes = held_dtypes(meta)
    else:
        ranked = _ranked(fingerprint)
        if not ranked:
            return None
        _, _, path, _, own = _serving(ranked)
        meta = read_sidecar(meta_path(path))
        dtypes = tuple(own) + tuple(sorted({d for r in ranked for d in r[4]} - set(own)))
    grouped_path = grouped_model_for(fingerprint, grouped_dir)
    grouped = None
    if grouped_path is not None:
        grouped = read_sidecar(meta_path(grouped_path)).get("dtypes") or ("bf16",)
    return Holdings(meta, dtypes, grouped)
