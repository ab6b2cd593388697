"""Feature schema: one schema for training and selection, finite, deterministic, fast."""

import math
import time

import numpy as np
import pandas as pd
import pytest

from kselect.kernels.aten.launched import ATEN_KERNEL_COLUMNS, kernel_facts
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.features import (
    FEATURE_NAMES,
    FEATURE_SCHEMA_VERSION,
    FeatureError,
    featurize,
    featurize_candidates,
    featurize_frame,
)
from kselect.training.data.rows import row_for

DEVICE = {
    "gpu_name": "NVIDIA H200",
    "sm_count": 132,
    "shared_memory_per_block_optin": 232448,
    "l2_cache_bytes": 60 * 2**20,
    "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0},
    "mem_bandwidth_gbs": 4800.0,
    "fingerprint_id": "h200test",
}

ATEN_COLUMNS = np.isin(np.array(FEATURE_NAMES), ATEN_KERNEL_COLUMNS)

EXTREME = [
    Problem(1, 1, 65536),
    Problem(1, 4096, 4096),
    Problem(65536, 1, 1),
    Problem(1, 7, 3),
    Problem(333, 7168, 5120, layout="nn"),
    Problem(7, 3584, 14336, layout="tt"),
    Problem(17, 31, 65536, "fp32", "tn"),
    Problem(96, 1000, 65536, op="bmm", batch=3),
    Problem(128, 128, 65536),
    Problem(4097, 4095, 12289, "fp16", op="addmm"),
]


def space(p):
    return [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")


def rows_of(p, cands):
    """Dataset-schema rows for (p, cands), as the collector writes them: what training featurises."""
    return pd.DataFrame([row_for(p, c) for c in cands])


def test_schema_is_versioned_and_named():
    assert isinstance(FEATURE_SCHEMA_VERSION, int)
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)
    X = featurize_candidates(Problem(64, 64, 64), space(Problem(64, 64, 64)), DEVICE)
    assert X.shape[1] == len(FEATURE_NAMES) and X.dtype == np.float32


@pytest.mark.parametrize("p", EXTREME, ids=lambda p: p.key)
def test_finite_and_deterministic_on_extreme_shapes(p):
    cands = space(p)
    a = featurize_candidates(p, cands, DEVICE)
    b = featurize_candidates(p, list(cands), DEVICE)
    t = tuple(cands)  # the selector's memoised path: encoding and candidate columns remembered
    c, d = featurize_candidates(p, t, DEVICE), featurize_candidates(p, t, DEVICE)
    assert a.shape == (len(cands), len(FEATURE_NAMES))
    own = a[:, ~ATEN_COLUMNS]
    assert np.isfinite(own).all(), [FEATURE_NAMES[j] for j in np.flatnonzero(~np.isfinite(a).all(0))]
    # nobody probed ATen's launch: its columns are missing (NaN), which the trees route by default
    assert np.isnan(a[:, ATEN_COLUMNS]).all()
    assert np.array_equal(a, b, equal_nan=True) and np.array_equal(a, c, equal_nan=True)
    assert np.array_equal(a, d, equal_nan=True)


@pytest.mark.parametrize("p", EXTREME[:6], ids=lambda p: p.key)
def test_training_and_selection_paths_agree(p):
    cands = space(p)
    assert np.array_equal(
        featurize_candidates(p, cands, DEVICE), featurize_frame(rows_of(p, cands), DEVICE), equal_nan=True
    )
    assert np.array_equal(featurize(p, cands, DEVICE), featurize(rows_of(p, cands), None, DEVICE), equal_nan=True)


def test_aten_kernel_columns_reach_both_paths():
    # a kernel name cuBLAS launched for 4x16x256 (nt) on an H100 (reports/2026-12-05-cublas-kernels)
    p = Problem(4, 16, 256)
    facts = kernel_facts(["nvjet_sm90_tst_64x8_64x16_1x1_h_bz_TNT"], 1, p.M, p.N, p.K)
    cands = space(p)
    sel = featurize_candidates(p, cands, DEVICE, aten_kernel=facts)
    train = featurize_frame(rows_of(p, cands).assign(**facts), DEVICE)
    assert np.isfinite(sel).all() and np.array_equal(sel, train)
    col = dict(zip(FEATURE_NAMES, sel[0]))
    assert col["aten_stages"] == 16 and col["aten_tile_k"] == 64 and col["aten_k_iters_over_stages"] == 4 / 16
    # the memoised selection path must not keep one problem's facts for the next
    t = tuple(cands)
    assert np.isfinite(featurize_candidates(p, t, DEVICE, aten_kernel=facts)).all()
    assert np.isnan(featurize_candidates(p, t, DEVICE)[:, ATEN_COLUMNS]).all()
    with pytest.raises(FeatureError, match="aten_stage"):
        featurize_candidates(p, cands, DEVICE, aten_kernel={"aten_stage": 1.0})


def test_features_mean_what_they_say():
    """Every M-, N- and K-derived column, computed here by hand, on a problem whose three sizes
    differ and whose layout reads A along M and B along N ("tn"): a feature taken from the wrong
    axis (tiles or padding of M from N, A's alignment from K) gives another number. M = 1000 = 8 x
    125, N = 1536 = 512 x 3, K = 4000 = 32 x 125; a 128 x 64 x 64 tile."""
    M, N, K, eb = 1000, 1536, 4000, 2
    p = Problem(M, N, K, layout="tn")
    c = Candidate.make("triton", "mm", BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
    x = dict(zip(FEATURE_NAMES, featurize_candidates(p, [c, Candidate.make("aten", "mm")], DEVICE)[0]))
    flops = 2.0 * M * N * K
    want = {
        "M": M,
        "N": N,
        "K": K,
        "batch": 1,
        "log2_M": math.log2(M),
        "log2_N": math.log2(N),
        "log2_K": math.log2(K),
        "log2_flops": math.log2(flops),
        "log2_MN_over_K": math.log2(M * N / K),
        "log2_N_over_M": math.log2(N / M),
        "log2_K_over_N": math.log2(K / N),
        "a_transposed": 1,
        "b_transposed": 0,
        "pow2_div_M": 3,
        "pow2_div_N": 9,
        "pow2_div_K": 5,
        "a_inner_align16": 1,  # A is M-major: 2,000 bytes
        "a_ld_align_log2": 4,
        "b_inner_align16": 1,  # B is N-major: 3,072 bytes
        "b_ld_align_log2": 7,  # capped
        "c_inner_align16": 1,
        "c_ld_align_log2": 7,
        "tiles_m": 8,  # ceil(1000 / 128)
        "tiles_n": 24,  # 1536 / 64
        "tiles": 192,
        "waves": 192 / 132,
        "last_wave_eff": (192 / 132) / 2,
        "pad_m": 8 * 128 / M - 1,
        "pad_n": 0.0,
        "k_iters": 63,  # ceil(4000 / 64)
        "pad_k": 63 * 64 / K - 1,
        "even_k": 0,
        "arith_intensity": flops / (eb * (M * K + K * N + M * N)),
        "tmpl_mm": 1,
        "tmpl_aten": 0,
        "smem_bytes": 2 * (128 * 64 + 64 * 64) * 3 + 128,
        "sm_count": 132,
    }
    for name, value in want.items():
        assert x[name] == pytest.approx(value), name


def test_fast_enough_for_the_whole_space():
    p = Problem(4096, 4096, 4096)
    cands = space(p)
    assert len(cands) > 2000
    featurize_candidates(p, cands, DEVICE)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        featurize_candidates(p, cands, DEVICE)
        times.append(time.perf_counter() - t)
    assert np.median(times) < 0.025  # target 5 ms; generous for a shared CI CPU


def test_bad_input_names_the_problem():
    p = Problem(64, 64, 64)
    with pytest.raises(FeatureError, match="sm_count"):
        featurize_candidates(p, space(p), {"gpu_name": "cpu", "sm_count": 0})
    with pytest.raises(FeatureError, match="Candidate"):
        featurize_candidates(p, ["triton:mm"], DEVICE)
    with pytest.raises(FeatureError, match="no candidates"):
        featurize_candidates(p, [], DEVICE)
    bad = rows_of(p, space(p)[:3]).assign(dtype="int8")
    with pytest.raises(FeatureError, match="int8"):
        featurize_frame(bad, DEVICE)
    with pytest.raises(ValueError, match="missing"):
        featurize_frame(rows_of(p, space(p)[:3]).drop(columns=["BLOCK_K"]), DEVICE)


def test_flydsl_candidates_encode_in_the_schema():
    """FlyDSL knobs land on the shared knob columns (TILE_M is BLOCK_M, waves are warps, SPLIT_K
    is k_split) under the 'other' template class; the dataset row the collector writes for the
    same candidate featurises identically. ISA features would need a new schema version."""
    from kselect.kernels.flydsl import space as fly
    from kselect.training.data.rows import row_for

    p = Problem(4096, 4096, 4096, layout="nt")
    cands = fly.candidates(p, "gfx942", "default")
    X = featurize_candidates(p, cands, DEVICE)
    assert FEATURE_SCHEMA_VERSION == 2 and X.shape == (len(cands), len(FEATURE_NAMES))
    assert np.isfinite(X[:, ~ATEN_COLUMNS]).all()
    col = {n: X[:, i] for i, n in enumerate(FEATURE_NAMES)}
    kw = pd.DataFrame([c.kwargs for c in cands])
    assert (col["BLOCK_M"] == kw.TILE_M).all() and (col["BLOCK_K"] == kw.TILE_K).all()
    assert (col["num_warps"] == kw.WAVES_M * kw.WAVES_N).all() and (col["k_split"] == kw.SPLIT_K).all()
    assert (col["tmpl_other"] == 1).all() and (col["tiles"] > 0).all()
    assert np.array_equal(featurize_frame(pd.DataFrame([row_for(p, c) for c in cands]), DEVICE), X, equal_nan=True)
