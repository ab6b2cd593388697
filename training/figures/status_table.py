"""The README status table's CPU-study figures ("Where it stands"), each from its report's raw
files; its GPU runs' figures are in gpu_runs.py, the AMD row's in amd.py."""

from __future__ import annotations

from pathlib import Path

from kselect.training.figures.raw import load_json, pct, seed_range, times

DOC = "README.md"
POOLED_BENCH = "reports/2026-12-05-headroom-h200-bf16/pooled-bench.json"
H200_EVALUATION = "reports/2026-12-05-headroom-h200-bf16/evaluation.json"
TRANSFER = "reports/2026-12-06-transfer-hopper/transfer.json"
STRICT_DTYPES = "reports/2026-12-07-dtypes-strict-family/dtypes.json"


def _pooled_kernels(root: Path, pair: str) -> float:
    """A pooled bench's kernel-time geomean, `pair` as 'a/b', over the decided GEMMs."""
    return load_json(root, POOLED_BENCH)["kernel_geomean"][f"{pair} decided"]["ratio"]


def _h200_capture(root: Path, policy: str) -> float:
    return load_json(root, H200_EVALUATION)["headroom_capture"]["family"]["realistic"][policy]


def transfer_seeds(root: Path, card: str, column: str, metric: str = "verify") -> list[float]:
    """One column of the transfer study (reports/2026-12-06-transfer-hopper): the capture per
    training seed on `card`'s data. `pooled_family_out` is the strict held-out-by-family one."""
    return load_json(root, TRANSFER)["cards"][card]["metrics"][metric]["per_seed"][column]


def transfer_mean(root: Path, card: str, column: str) -> float:
    seeds = transfer_seeds(root, card, column)
    return sum(seeds) / len(seeds)


def strict_dtype(root: Path, dtype: str, selection: str) -> dict:
    """One selection's capture on one dtype (reports/2026-12-07-dtypes-strict-family): its
    5-seed mean, per-seed list and seed 0 (the shipped model's random state)."""
    return load_json(root, STRICT_DTYPES)["dtypes"][dtype]["selections"][selection]


def _strict_mean(root: Path, dtype: str, selection: str) -> float:
    return strict_dtype(root, dtype, selection)["capture_mean_over_seeds"]


def _tuning_ratio(root: Path) -> float:
    totals = load_json(root, POOLED_BENCH)["tuning_totals_s"]
    return totals["kselect-verify"] / totals["default"]


# name -> (the doc it is in, how its text is computed from the repository root)
FIGURES = {
    # 26 decided GEMMs vs stock DEFAULT, pooled runs (H200)
    "status.h200-pooled.decided": (
        DOC,
        lambda r: str(load_json(r, POOLED_BENCH)["kernel_geomean"]["kselect-verify/default decided"]["shapes"]),
    ),
    "status.h200-pooled.verify-vs-default": (DOC, lambda r: times(1 / _pooled_kernels(r, "kselect-verify/default"))),
    "status.h200-pooled.plain-vs-default": (DOC, lambda r: times(1 / _pooled_kernels(r, "plain/default"))),
    "status.h200-pooled.tuning": (DOC, lambda r: times(_tuning_ratio(r))),
    # bf16 headroom capture held out by family
    "status.h200-verify": (DOC, lambda r: pct(_h200_capture(r, "verify"))),
    "status.h200-predict": (DOC, lambda r: pct(_h200_capture(r, "predict"))),
    "status.hopper-bf16-strict-h100": (DOC, lambda r: pct(transfer_mean(r, "H100", "pooled_family_out"))),
    "status.hopper-bf16-strict-h100-seeds": (DOC, lambda r: seed_range(transfer_seeds(r, "H100", "pooled_family_out"))),
    "status.h100-own": (DOC, lambda r: pct(transfer_mean(r, "H100", "own"))),
    # fp16 / TF32 / fp32 held out by family
    "status.fp16-verify": (DOC, lambda r: pct(_strict_mean(r, "fp16", "combined verify"))),
    "status.fp16-seeds": (DOC, lambda r: seed_range(strict_dtype(r, "fp16", "combined verify")["per_seed"])),
    "status.tf32-verify": (DOC, lambda r: pct(_strict_mean(r, "tf32", "combined verify"))),
    "status.tf32-seeds": (DOC, lambda r: seed_range(strict_dtype(r, "tf32", "combined verify")["per_seed"])),
    "status.fp16-default": (DOC, lambda r: pct(_strict_mean(r, "fp16", "default"))),
    "status.tf32-default": (DOC, lambda r: pct(_strict_mean(r, "tf32", "default"))),
    "status.fp32-verify": (DOC, lambda r: pct(_strict_mean(r, "fp32", "combined verify"))),
    **{
        f"status.{d}-shapes": (DOC, lambda r, d=d: str(load_json(r, STRICT_DTYPES)["dtypes"][d]["shapes"]))
        for d in ("fp16", "tf32", "fp32")
    },
}
