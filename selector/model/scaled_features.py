"""fp8 scaled_mm's own problem columns (the scaling kind, the output's bytes, fast accumulation),
kept out of the bf16 schema's FEATURE_NAMES so every shipped model's vectors (and
FEATURE_SCHEMA_VERSION) stay as they are: a model trained on fp8 data appends them."""

from __future__ import annotations

import numpy as np

from kselect.kernels.problem import Problem

SCALED_MM_FEATURE_NAMES = ("scaled_rowwise", "out_dtype_bytes", "fast_accum")


def scaled_mm_problem_features(problem: Problem) -> np.ndarray:
    """SCALED_MM_FEATURE_NAMES of one problem (zeros and the operands' bytes for other ops)."""
    return np.array(
        [float(problem.scaling == "rowwise"), float(problem.out_dtype_bytes), float(problem.fast_accum)],
        dtype=np.float64,
    )
