"""fp8 scaled_mm's feature columns: additive (the shipped schema is untouched) and readable
for an fp8 problem and its candidates through the one featurisation."""

import json
from pathlib import Path

from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model import features as f
from kselect.selector.model.scaled_features import SCALED_MM_FEATURE_NAMES, scaled_mm_problem_features


def test_scaled_columns_leave_the_shipped_schema_alone():
    assert f.FEATURE_SCHEMA_VERSION == 2
    assert not set(SCALED_MM_FEATURE_NAMES) & set(f.FEATURE_NAMES)


def test_scaled_problem_features_and_featurisation():
    row = Problem(64, 4096, 4096, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", fast_accum=True)
    tens = Problem(64, 4096, 4096, "fp8e4m3", "nt", "scaled_mm", scaling="tensorwise", out_dtype="fp32")
    assert scaled_mm_problem_features(row).tolist() == [1.0, 2.0, 1.0]
    assert scaled_mm_problem_features(tens).tolist() == [0.0, 4.0, 0.0]
    assert scaled_mm_problem_features(Problem(64, 64, 64)).tolist() == [0.0, 2.0, 0.0]
    cands = triton_space(row, "default")
    device = json.loads((Path(__file__).resolve().parents[2] / "data/h200-bf16/fingerprint.json").read_text())
    x = f.featurize(row, cands, device)
    assert x.shape == (len(cands), len(f.FEATURE_NAMES))
    assert (x[:, f.FEATURE_NAMES.index("dtype_bytes")] == 1).all()
