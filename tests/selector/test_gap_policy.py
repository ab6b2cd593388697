"""The policy for ATen-relative scores: how many templates verify times, when predict leaves ATen."""

import math

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.selector.decide.gap_policy import VERIFY_GAP_TIERS, confident_template, templates_to_time
from kselect.selector.decide.policy import choose_kept
from kselect.selector.model.compile_price import CompilePrice


def tile(bm, bn, warps=4):
    return Candidate.make("triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=warps)


ATEN = Candidate.make("aten", "mm")
# two members of one tile family (64x64, 4 and 8 warps), then three other families
CANDS = [ATEN, tile(64, 64, 4), tile(64, 64, 8), tile(128, 64), tile(64, 128), tile(128, 128)]


def test_tiers():
    assert templates_to_time(-0.2) == 4
    assert templates_to_time(VERIFY_GAP_TIERS[0][0]) == 4
    assert templates_to_time(0.25) == 4  # shipped: the cap up to the target's clip, then none
    assert templates_to_time(0.31) == 0
    tiers = ((0.10, 4), (0.20, 2), (0.30, 1))
    assert templates_to_time(0.1, tiers) == 4 and templates_to_time(0.15, tiers) == 2
    assert templates_to_time(0.25, tiers) == 1 and templates_to_time(0.31, tiers) == 0
    assert templates_to_time(math.inf) == 0 and templates_to_time(math.nan) == 0
    assert confident_template(-0.2) and not confident_template(-0.1)


def test_verify_times_aten_and_the_gap_s_count_one_per_family():
    scores = np.array([0.0, -0.10, -0.12, -0.05, 0.02, 0.2])  # best template: the 8-warp 64x64
    kept, why = choose_kept(CANDS, scores, "verify", 4, True, False, aten_gap=True)
    assert kept == [2, 3, 4, 5, 0]  # 4 templates (the 4-warp 64x64 is its family's second), ATen
    assert "4 template" in why
    far = np.array([0.0, 0.40, 0.35, 0.5, 0.6, 0.7])
    kept, _ = choose_kept(CANDS, far, "verify", 4, True, False, aten_gap=True)
    assert kept == [0]  # nothing predicted close to ATen: ATen alone
    near = np.array([0.0, 0.15, 0.2, 0.5, 0.6, 0.7])
    kept, _ = choose_kept(CANDS, near, "verify", 4, True, False, aten_gap=True)
    assert kept == [1, 3, 4, 5, 0]  # gap 0.15 -> 4 templates of distinct families, ATen
    assert choose_kept(CANDS, scores, "verify", 1, True, False, aten_gap=True)[0] == [2, 0]  # the cap wins


def test_verify_keeps_the_compile_price():
    scores = np.array([0.0, -0.10, -0.12, -0.05, 0.02, 0.2])
    slow = {3: 9000.0}
    price = CompilePrice(lambda idx: np.array([slow.get(int(i), 300.0) for i in idx]), 300.0, 1.5)
    kept, why = choose_kept(CANDS, scores, "verify", 4, True, False, aten_gap=True, compile_price=price)
    assert kept == [2, 4, 5, 0] and price.passed == [3] and f"passed over 1 slow to compile ({CANDS[3].key})" in why


def test_predict_needs_confidence():
    sure = np.array([0.0, -0.30, -0.12, -0.05, 0.02, 0.2])
    assert choose_kept(CANDS, sure, "predict", 4, True, False, aten_gap=True)[0] == [1]
    unsure = np.array([0.0, -0.10, -0.12, -0.05, 0.02, 0.2])
    kept, why = choose_kept(CANDS, unsure, "predict", 4, True, False, aten_gap=True)
    assert kept == [0] and "ATen" in why


def test_without_aten_a_template_is_still_timed():
    cands = CANDS[1:]
    scores = np.array([0.5, 0.6, 0.7, 0.8, 0.9])
    assert choose_kept(cands, scores, "verify", 4, True, False, aten_gap=True)[0] == [0]
    assert choose_kept(cands, scores, "predict", 4, True, False, aten_gap=True)[0] == [0]


def test_gap_scores_come_from_a_reg_aten_model():
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel

    assert CostModelRanker(CostModel(objective="reg:aten"), None).aten_gap_scores
    assert not CostModelRanker(CostModel(objective="rank:ndcg"), None).aten_gap_scores


def test_a_reach_model_sets_how_many_templates_verify_times():
    """With a reach model the count follows its best template gap, the ranking still the cost
    model's: within the bound the cap, past it ATen alone (nothing compiled or timed)."""
    scores = np.array([0.0, -0.10, -0.12, -0.05, 0.02, 0.2])  # the cost model: all within its clip
    tiers = ((0.4, 4),)
    near = np.array([0.0, 0.35, 0.6, 0.5, 0.7, 0.9])  # the reach model's best template: +0.35
    kept, why = choose_kept(CANDS, scores, "verify", 4, True, False, aten_gap=True, reach=(near, tiers))
    assert kept == [2, 3, 4, 5, 0] and "reach +0.350 -> 4 template" in why  # the cost model's order
    far = np.array([0.0, 0.45, 0.6, 0.5, 0.7, np.inf])
    kept, why = choose_kept(CANDS, scores, "verify", 4, True, False, aten_gap=True, reach=(far, tiers))
    assert kept == [0] and "reach +0.450 -> no template within reach" in why
    # the reach model's own inf/NaN rows are no opinion; none left: no template
    blind = np.array([0.0, np.nan, np.inf, np.nan, np.nan, np.nan])
    assert choose_kept(CANDS, scores, "verify", 4, True, False, aten_gap=True, reach=(blind, tiers))[0] == [0]
    # predict never reads it
    assert choose_kept(CANDS, scores, "predict", 4, True, False, aten_gap=True, reach=(far, tiers))[0] == [0]
    # without ATen one template is still timed
    assert choose_kept(CANDS[1:], scores[1:], "verify", 4, True, False, aten_gap=True, reach=(far[1:], tiers))[0] == [1]
