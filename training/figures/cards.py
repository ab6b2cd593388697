"""The model cards' figures (models/*.md): the part each sidecar gives, rendered as training
renders it, and the held-out-by-family sections' numbers from their reports' raw files."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.figures.model_card_text import card_text
from kselect.training.figures.raw import load_json, pct, seed_range, times
from kselect.training.figures.status_table import (
    STRICT_DTYPES,
    TRANSFER,
    strict_dtype,
    transfer_mean,
    transfer_seeds,
)

DTYPES_RULE = "reports/2026-12-06-dtypes-model-h100/dtypes.json"


def _sidecar_card(name: str):
    """A cost model's card as its sidecar renders it (figures/model_card_text.py)."""

    def render(root: Path) -> str:
        return card_text(Path(root) / "models" / f"{name}.json")

    return render


def _compile_cost_card(root: Path) -> str:
    """The compile-cost model's card from its sidecar (training/compile_times/fit.py); JSON
    keeps the quantiles' keys as strings, the renderer reads them as numbers."""
    from kselect.training.compile_times.fit import model_card

    meta = json.loads(Path(root, "models/triton-compile-sm90.meta.json").read_text())
    meta["cpu_ms_quantiles"] = {int(k): v for k, v in meta["cpu_ms_quantiles"].items()}
    return model_card(meta)


def _seed0(root: Path, card: str, column: str) -> str:
    return pct(transfer_seeds(root, card, column)[0])


def _strict_difference(root: Path, card: str, column: str) -> float:
    """How far a column's capture lies below the card's own model, in points (bootstrap)."""
    diff = load_json(root, TRANSFER)["cards"][card]["metrics"]["verify"]["bootstrap"]["differences"][column]
    return -100 * diff["difference"]


def _dtype(root: Path, dtype: str, selection: str, source: str = STRICT_DTYPES) -> dict:
    if source == STRICT_DTYPES:
        return strict_dtype(root, dtype, selection)
    return load_json(root, source)["dtypes"][dtype]["selections"][selection]


def _mean(root: Path, dtype: str, selection: str, source: str = STRICT_DTYPES) -> str:
    return pct(_dtype(root, dtype, selection, source)["capture_mean_over_seeds"])


def _shapes(root: Path, dtype: str) -> str:
    return str(load_json(root, STRICT_DTYPES)["dtypes"][dtype]["shapes"])


HOPPER_BF16 = "models/hopper-bf16.md"
FP16_TF32 = "models/hopper-fp16-tf32.md"


def _held_out_dtype(dtype: str) -> dict:
    """A dtype's held-out figures on the hopper-fp16-tf32 card: the 5-seed mean, the seeds'
    range, seed 0 (what shipped), its shapes, stock DEFAULT's and the nearest shape's."""
    verify = "combined verify"
    return {
        f"fp16-tf32.{dtype}": (FP16_TF32, lambda r: _mean(r, dtype, verify)),
        f"fp16-tf32.{dtype}-seeds": (FP16_TF32, lambda r: seed_range(_dtype(r, dtype, verify)["per_seed"])),
        f"fp16-tf32.{dtype}-seed0": (FP16_TF32, lambda r: pct(_dtype(r, dtype, verify)["per_seed"][0])),
        f"fp16-tf32.{dtype}-shapes": (FP16_TF32, lambda r: _shapes(r, dtype)),
        f"fp16-tf32.{dtype}-default": (FP16_TF32, lambda r: _mean(r, dtype, "default")),
        f"fp16-tf32.{dtype}-nearest": (FP16_TF32, lambda r: _mean(r, dtype, "nearest_shape aten+4")),
    }


# name -> (card, how its text is computed from the repository root)
FIGURES = {
    "card.hopper-bf16": (HOPPER_BF16, _sidecar_card("hopper-bf16")),
    "card.h200-bf16": ("models/h200-bf16.md", _sidecar_card("h200-bf16")),
    "card.hopper-fp16-tf32": (FP16_TF32, _sidecar_card("hopper-fp16-tf32")),
    "card.triton-compile-sm90": ("models/triton-compile-sm90.md", _compile_cost_card),
    # hopper-bf16, held out by family: the strict figure (no row of the family from any card)
    "hopper-bf16.strict-h100": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H100", "pooled_family_out"))),
    "hopper-bf16.strict-h100-seeds": (
        HOPPER_BF16,
        lambda r: seed_range(transfer_seeds(r, "H100", "pooled_family_out")),
    ),
    "hopper-bf16.strict-h100-seed0": (HOPPER_BF16, lambda r: _seed0(r, "H100", "pooled_family_out")),
    "hopper-bf16.strict-h200": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H200", "pooled_family_out"))),
    "hopper-bf16.strict-h200-seeds": (
        HOPPER_BF16,
        lambda r: seed_range(transfer_seeds(r, "H200", "pooled_family_out")),
    ),
    "hopper-bf16.strict-h200-seed0": (HOPPER_BF16, lambda r: _seed0(r, "H200", "pooled_family_out")),
    "hopper-bf16.h100-own": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H100", "own"))),
    "hopper-bf16.h100-own-seeds": (HOPPER_BF16, lambda r: seed_range(transfer_seeds(r, "H100", "own"))),
    "hopper-bf16.h200-as-is": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H100", "other_as_is"))),
    "hopper-bf16.h200-as-is-seeds": (HOPPER_BF16, lambda r: seed_range(transfer_seeds(r, "H100", "other_as_is"))),
    "hopper-bf16.h200-as-is-seed0": (HOPPER_BF16, lambda r: _seed0(r, "H100", "other_as_is")),
    "hopper-bf16.h200-own": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H200", "own"))),
    "hopper-bf16.h200-own-seeds": (HOPPER_BF16, lambda r: seed_range(transfer_seeds(r, "H200", "own"))),
    "hopper-bf16.h200-strict-gap": (HOPPER_BF16, lambda r: f"{_strict_difference(r, 'H200', 'pooled_family_out'):.1f}"),
    # not held out by family: the family's rows from the other card stay in training
    "hopper-bf16.pooled-h100": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H100", "pooled"))),
    "hopper-bf16.pooled-h100-seeds": (HOPPER_BF16, lambda r: seed_range(transfer_seeds(r, "H100", "pooled"))),
    "hopper-bf16.pooled-h200": (HOPPER_BF16, lambda r: pct(transfer_mean(r, "H200", "pooled"))),
    "hopper-bf16.pooled-h200-seeds": (HOPPER_BF16, lambda r: seed_range(transfer_seeds(r, "H200", "pooled"))),
    # hopper-fp16-tf32, held out by family (reports/2026-12-07-dtypes-strict-family)
    **_held_out_dtype("fp16"),
    **_held_out_dtype("tf32"),
    "fp16-tf32.fp32": (FP16_TF32, lambda r: _mean(r, "fp32", "combined verify")),
    "fp16-tf32.fp32-shapes": (FP16_TF32, lambda r: _shapes(r, "fp32")),
    "fp16-tf32.fp32-default": (FP16_TF32, lambda r: _mean(r, "fp32", "default")),
    "fp16-tf32.bf16": (FP16_TF32, lambda r: _mean(r, "bf16", "combined verify")),
    "fp16-tf32.bf16-recipe": (FP16_TF32, lambda r: _mean(r, "bf16", "hopper_bf16 verify")),
    "fp16-tf32.fp16-bf16-recipe": (FP16_TF32, lambda r: _mean(r, "fp16", "hopper_bf16 verify")),
    "fp16-tf32.tf32-bf16-recipe": (FP16_TF32, lambda r: _mean(r, "tf32", "hopper_bf16 verify")),
    # the rule's own folds kept the family's H200 rows (reports/2026-12-06-dtypes-model-h100)
    "fp16-tf32.rule-fp16": (FP16_TF32, lambda r: _mean(r, "fp16", "combined verify", DTYPES_RULE)),
    "fp16-tf32.rule-tf32": (FP16_TF32, lambda r: _mean(r, "tf32", "combined verify", DTYPES_RULE)),
    "fp16-tf32.rule-tf32-predict": (
        FP16_TF32,
        lambda r: f"{100 * _dtype(r, 'tf32', 'combined predict', DTYPES_RULE)['capture_mean_over_seeds']:.0f}",
    ),
    "fp16-tf32.rule-tf32-predict-geomean": (
        FP16_TF32,
        lambda r: times(_dtype(r, "tf32", "combined predict", DTYPES_RULE)["seed_0"]["geomean_pick_over_aten"], 2),
    ),
    "fp16-tf32.rule-tf32-predict-worst": (
        FP16_TF32,
        lambda r: times(_dtype(r, "tf32", "combined predict", DTYPES_RULE)["seed_0"]["worst_pick_over_aten"], 2),
    ),
}
