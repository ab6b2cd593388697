"""A grouped GEMM's candidates as feature rows: the problem's columns (the grouped schema, its
own beside features.py's, which it leaves alone), the candidate's knobs, and what the tile does with this routing -- the persistent
kernel's tiles over every group, the padded rows it computes for nothing, its waves over the SMs."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.selector.model.features import FeatureError, device_constants

GROUPED_FEATURE_SCHEMA_VERSION = 1
GROUPED_PROBLEM_FEATURES = (
    "G",
    "log2_G",
    "rows_total",
    "log2_rows_total",
    "N",
    "K",
    "log2_N",
    "log2_K",
    "dtype_bytes",
    "b_transposed",
    "ragged_M",
    "ragged_K",
    "rows_mean",
    "rows_max",
    "rows_min",
    "rows_cv",
    "rows_max_over_mean",
    "empty_groups_frac",
    "log2_flops",
)


def grouped_problem_features(problem) -> dict:
    """A GroupedProblem's columns: its sizes and the rows per group its routing gives (mean,
    max, min, coefficient of variation, the share of groups left empty)."""
    sizes = problem.group_sizes().astype(np.float64)
    rows = float(sizes.sum()) if problem.ragged_dim == "M" else float(problem.M)
    mean = float(sizes.mean())
    return {
        "G": float(problem.G),
        "log2_G": float(np.log2(problem.G)),
        "rows_total": rows,
        "log2_rows_total": float(np.log2(rows)),
        "N": float(problem.N),
        "K": float(problem.K),
        "log2_N": float(np.log2(problem.N)),
        "log2_K": float(np.log2(problem.K)),
        "dtype_bytes": float(problem.dtype_bytes),
        "b_transposed": float(problem.layout[1] == "t"),
        "ragged_M": float(problem.ragged_dim == "M"),
        "ragged_K": float(problem.ragged_dim == "K"),
        "rows_mean": mean,
        "rows_max": float(sizes.max()),
        "rows_min": float(sizes.min()),
        "rows_cv": float(sizes.std() / mean) if mean > 0 else 0.0,
        "rows_max_over_mean": float(sizes.max() / mean) if mean > 0 else 0.0,
        "empty_groups_frac": float(np.mean(sizes == 0)),
        "log2_flops": float(np.log2(problem.flops)),
    }


CANDIDATE_COLUMNS = ("is_aten", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps")
TILE_COLUMNS = ("log2_tiles", "row_padding_frac", "waves", "last_wave_fill", "smem_frac")
GROUPED_FEATURE_NAMES = (*GROUPED_PROBLEM_FEATURES, *CANDIDATE_COLUMNS, *TILE_COLUMNS, "sm_count")


def grouped_tiles(problem, block_m: np.ndarray, block_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tiles over all groups, padded rows / rows) per (BLOCK_M, BLOCK_N), with this routing."""
    sizes = problem.group_sizes()
    rows = sizes if problem.ragged_dim == "M" else np.full(problem.G, problem.M)
    cols = sizes if problem.ragged_dim == "N" else np.full(problem.G, problem.N)
    bm, bn = block_m[:, None], block_n[:, None]
    tiles = (-(-rows[None, :] // bm) * -(-cols[None, :] // bn) * (rows[None, :] > 0) * (cols[None, :] > 0)).sum(1)
    padded = (-(-rows[None, :] // bm) * bm).sum(1)
    real = max(int(rows.sum()), 1)
    return tiles.astype(np.float64), (padded - real) / real


def featurize_grouped(problem, candidates: Sequence[Candidate], device: Mapping) -> np.ndarray:
    """One row per candidate, columns GROUPED_FEATURE_NAMES (ATen's tile columns are 0)."""
    if len(candidates) == 0:
        raise FeatureError("no candidates to featurise")
    dev = device_constants(device, problem.dtype)
    prob = grouped_problem_features(problem)
    knobs = np.array(
        [[float(c.backend == "aten")] + [float(c.get(k, 0) or 0) for k in CANDIDATE_COLUMNS[1:]] for c in candidates]
    )
    bm, bn, bk, stages = (np.maximum(knobs[:, i], 1) for i in (1, 2, 3, 4))
    tiles, padding = grouped_tiles(problem, bm.astype(np.int64), bn.astype(np.int64))
    sms = dev["sm_count"]
    waves = tiles / sms
    smem = (bm + bn) * bk * stages * problem.dtype_bytes / dev["smem_optin"]
    tile_cols = np.stack([np.log2(np.maximum(tiles, 1)), padding, waves, waves - np.floor(waves), smem], axis=1)
    tile_cols[knobs[:, 0] == 1] = 0.0
    prob_cols = np.broadcast_to(np.array([prob[k] for k in GROUPED_PROBLEM_FEATURES]), (len(candidates), len(prob)))
    return np.concatenate([prob_cols, knobs, tile_cols, np.full((len(candidates), 1), sms)], axis=1)
