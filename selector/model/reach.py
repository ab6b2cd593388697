"""Verify's budget model ("reach"): how many templates verify times for a GEMM, read from a
second booster trained beside a 'reg:aten' cost model.

The cost model's target is the gap to cuBLAS clipped at 0.30 (training/learn/train.py), so its
best template reads the same whether it runs 25 % or 10x slower than ATen, and verify times 4
templates on every GEMM. The reach model is the same recipe (the cost model's own
hyper-parameters, its data) with the target clipped at `aten_gap_max` (0.7 as shipped). It never
ranks: the cost model still picks which templates are timed; the reach model's best template
gap only sets how many (`verify_tiers`: within a bound, that many; past the last bound none --
ATen alone, nothing compiled or timed, and no nearest-shape slot).

Held out by model family on the H200's data (reports/2026-12-07-verify-budget, the shipped
seed): verify with the reach budget (<= 0.4: 4, else none) keeps 89.0 % of the measured gain over
cuBLAS, the shipped verify's figure to the digit, timing 2.57 templates a GEMM instead of 4, 129
of 362 GEMMs timing none. On the H100's data its gaps stay under 0.4, so no model ships there.

On disk: `<model>.reach.json` and `<model>.reach.meta.json` beside the cost model (kind
"reach-model", artifact.py). Its sidecar names the model it was trained beside (`beside`: file,
the sha256 of its trees); a reach model whose cost model has since been retrained, or that
cannot be read, is a broken model: ModelError, and the GEMM goes to stock like any other.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from kselect.selector.model.artifact import ModelError
from kselect.selector.model.cost_model import CostModel

KIND = "reach-model"
STEM_SUFFIX = ".reach"  # models/h200-bf16.json -> models/h200-bf16.reach.json
REACH_GAP_MAX = 0.7
REACH_TIERS = ((0.4, 4),)


def reach_path(model_path: str | Path) -> Path:
    """Where the reach model of the cost model at `model_path` lives."""
    p = Path(model_path)
    return p.with_name(p.stem + STEM_SUFFIX + p.suffix)


def beside_fields(model_path: str | Path) -> dict:
    """What identifies the cost model a reach model was trained beside: its file's name and the
    sha256 of its trees (a retrained model differs there, whatever its provenance says)."""
    path = Path(model_path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelError(f"cannot read the cost model {path}: {exc}") from None
    return {"file": path.name, "sha256": digest}


def check_tiers(tiers) -> tuple[tuple[float, int], ...]:
    """(bound, templates) pairs, bounds ascending, counts >= 0; ModelError otherwise."""
    try:
        out = tuple((float(b), int(n)) for b, n in tiers)
    except (TypeError, ValueError):
        raise ModelError(f"verify tiers {tiers!r}: expected (gap bound, templates) pairs") from None
    if (
        not out
        or any(not math.isfinite(b) or n < 0 for b, n in out)
        or [b for b, _ in out] != sorted(b for b, _ in out)
    ):
        raise ModelError(f"verify tiers {tiers!r}: finite gap bounds, ascending, and template counts >= 0")
    return out


class ReachModel:
    """A loaded reach model: its trees (a CostModel of kind "reach-model"), the tiers verify reads
    its best template gap by, and its ident (part of the decision cache key)."""

    def __init__(self, model: CostModel, tiers: Sequence[tuple[float, int]]):
        self.model = model
        self.tiers = check_tiers(tiers)
        meta = getattr(model, "metadata_", {}) or {}
        self.aten_gap_max = meta.get("aten_gap_max")
        tiers = ",".join(f"{b:g}x{n}" for b, n in self.tiers)
        self.ident = f"reach:{str(meta.get('dataset_hash') or '')[:16]}:{meta.get('trained_at')}:{tiers}"

    @classmethod
    def beside(cls, model: CostModel) -> "ReachModel | None":
        """The reach model beside a loaded cost model (None: there is none, or the model was not
        read from a file). ModelError for one that cannot serve it: unreadable, of other features,
        or trained beside another model (the cost model retrained since)."""
        source = getattr(model, "path_", None)
        if source is None or not reach_path(source).is_file():
            return None
        path = reach_path(source)
        reach = CostModel.load(path, kind=KIND)
        meta = reach.metadata_
        if not reach.aten_relative:
            raise ModelError(f"{path}: a reach model predicts gaps to ATen (objective reg:aten), not {reach.objective}")
        if tuple(reach.feature_names_) != tuple(model.feature_names_):
            raise ModelError(f"{path} reads other features than the cost model {Path(source).name}: retrain it")
        want = beside_fields(source)
        got = {k: (meta.get("beside") or {}).get(k) for k in want}
        if got != want:
            raise ModelError(
                f"{path} was trained beside {got}, not the cost model as it is now ({want}): "
                "retrain it with `kselect train-reach`"
            )
        reach.set_threads(1)
        try:
            return cls(reach, meta.get("verify_tiers") or ())
        except ModelError as exc:
            raise ModelError(f"{path}: {exc}") from None

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Its predicted gap to ATen per row (log time; +inf where the row cannot run), ranked as
        the cost model's scores are (selection_cost's cascade)."""
        return self.model.selection_cost(X)


def save(model: CostModel, path: str | Path, meta: Mapping, tiers=REACH_TIERS) -> Path:
    """Write a fitted reach model and its sidecar (`meta`: provenance, `beside`, `aten_gap_max`)."""
    return model.save(path, {**meta, "verify_tiers": [list(t) for t in check_tiers(tiers)]}, kind=KIND)
