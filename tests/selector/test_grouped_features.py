"""The grouped GEMMs' features: rows-per-group statistics of the routing, and what each tile does
with them (the persistent kernel's tiles, padded rows, waves)."""

from __future__ import annotations

import numpy as np
import pytest

from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN, grouped_space
from kselect.selector.model.features import FeatureError
from kselect.selector.model.grouped_features import GROUPED_FEATURE_NAMES, featurize_grouped, grouped_problem_features

DEVICE = {"sm_count": 132, "peak_tflops": {"bf16": 989.0}, "mem_bandwidth_gbs": 3350.0}
PREFILL = GroupedProblem(32, 8192, 7168, 2048)


def test_rows_statistics_follow_the_routing():
    uniform = grouped_problem_features(PREFILL)
    skewed = grouped_problem_features(PREFILL.with_routing("zipf1.2", seed=0))
    assert uniform["rows_mean"] == skewed["rows_mean"] == 256 and uniform["rows_cv"] == 0
    assert skewed["rows_cv"] > 1 and skewed["rows_max"] > 4 * 256 and skewed["rows_max_over_mean"] > 4
    decode = grouped_problem_features(GroupedProblem(32, 8, 7168, 2048))  # Inductor's split: one group
    assert decode["empty_groups_frac"] == pytest.approx(31 / 32) and decode["rows_max"] == 8


def test_each_tile_counts_its_tiles_over_every_group():
    problem = PREFILL.with_routing("zipf1.2", seed=0)
    cands = grouped_space(problem)
    X = featurize_grouped(problem, cands, DEVICE)
    assert X.shape == (len(cands), len(GROUPED_FEATURE_NAMES))
    col = {name: X[:, i] for i, name in enumerate(GROUPED_FEATURE_NAMES)}
    rows = problem.group_sizes()
    for i, c in enumerate(cands[1:], start=1):
        bm, bn = c.get("BLOCK_M"), c.get("BLOCK_N")
        tiles = int(sum(-(-r // bm) * -(-problem.N // bn) for r in rows if r))
        assert col["log2_tiles"][i] == pytest.approx(np.log2(tiles))
        assert col["waves"][i] == pytest.approx(tiles / 132)
        assert col["row_padding_frac"][i] == pytest.approx((sum(-(-r // bm) * bm for r in rows) - 8192) / 8192)
    assert cands[0] == ATEN and col["is_aten"][0] == 1 and col["log2_tiles"][0] == 0


def test_no_candidates_or_no_device_is_refused():
    with pytest.raises(FeatureError, match="no candidates"):
        featurize_grouped(PREFILL, [], DEVICE)
    with pytest.raises(FeatureError, match="lacks sm_count"):
        featurize_grouped(PREFILL, [ATEN], {"gpu_name": "x"})
