"""The grouped-GEMM model's checks on a small measured table: the gap target, a fit and its pick,
the routing rule of docs/grouped-mm.md, and the bench's verdict against plain and stock."""

from __future__ import annotations

import pandas as pd
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN
from kselect.training.data.rows import row_for
from kselect.training.learn import grouped_fit as learn

SMALL = Candidate.make("triton", "grouped_mm", BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, num_stages=3, num_warps=4)
LARGE = Candidate.make("triton", "grouped_mm", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_stages=3, num_warps=8)
DEVICE = {"sm_count": 132, "peak_tflops": {"bf16": 989.0}, "mem_bandwidth_gbs": 3350.0}
DECODE = GroupedProblem(32, 64, 4096, 7168)
PREFILL = GroupedProblem(32, 8192, 4096, 7168)


def _table(times: dict) -> pd.DataFrame:
    """Rows as the collector writes them: {(problem, candidate): (time_ms, spread)}."""
    rows = [row_for(p, c, time_ms=t, spread=s, status="ok", space="grouped") for (p, c), (t, s) in times.items()]
    return learn.measured(pd.DataFrame(rows))


def _times(skewed_winner: Candidate) -> dict:
    """Decode favours small row tiles, prefill large; under Zipf, prefill's winner is the given one."""
    out = {}
    for base in (DECODE, PREFILL):
        for routing in ("uniform", "zipf1.2"):
            p = base.with_routing(routing, seed=0)
            small_wins = base is DECODE
            out[(p, ATEN)] = (1.0, 0.01)
            out[(p, SMALL)] = (0.6 if small_wins else 1.4, 0.01)
            out[(p, LARGE)] = (1.3 if small_wins else 0.7, 0.01)
            if base is PREFILL and routing == "zipf1.2" and skewed_winner == SMALL:
                out[(p, SMALL)], out[(p, LARGE)] = (0.5, 0.01), (0.9, 0.01)
    return out


def test_the_target_is_the_gap_to_aten_per_problem():
    rows = _table(_times(LARGE))
    X, y = learn.features_and_target(rows, DEVICE)
    assert X.shape[0] == len(rows) == 12 and sorted(set(y.round(6)))[0] == pytest.approx(-1.0, abs=0.6)
    assert (y[rows.sort_values("problem_key")["candidate_key"].to_numpy() == ATEN.key] == 0).all()


def test_a_fit_picks_each_shapes_winner_from_the_shape_alone():
    rows = _table(_times(LARGE))
    model = learn.fit(rows, DEVICE, trees=30)
    cands = [ATEN, SMALL, LARGE]
    assert learn.pick(model, DECODE.with_routing("zipf1.2"), cands, DEVICE) == SMALL
    assert learn.pick(model, PREFILL, cands, DEVICE) == LARGE


def test_the_robust_rule_turns_on_only_where_skew_moves_the_winner():
    assert learn.uniform_pick_loses_under_skew(_table(_times(LARGE)))["robust_rule"] is False
    moved = learn.uniform_pick_loses_under_skew(_table(_times(SMALL)))
    assert moved["robust_rule"] is True and moved["lost"] == [learn.shape_key(PREFILL)]


def test_the_bench_reads_every_routing_against_plain_and_stock():
    rows = _table(_times(SMALL))
    picks = {learn.shape_key(DECODE): SMALL.key, learn.shape_key(PREFILL): LARGE.key}
    stock = {PREFILL.key: {"candidate": SMALL.key}}
    verdicts = {v.problem_key: v for v in learn.bench(rows, picks, stock)}
    assert len(verdicts) == 4 and not any(v.slower_than_plain for v in verdicts.values())
    assert verdicts[PREFILL.key].stock_ms == 1.4 and verdicts[DECODE.key].stock_ms == 1.0  # no record: ATen
    slow = learn.bench(rows, {learn.shape_key(PREFILL): SMALL.key}, {})
    assert [v.problem_key for v in slow if v.slower_than_plain] == [PREFILL.key]


def test_evaluate_fits_on_one_set_and_scores_another():
    train = pd.DataFrame([row_for(p, c, time_ms=t, spread=s) for (p, c), (t, s) in _times(LARGE).items()])
    result = learn.evaluate(train, train, DEVICE, {PREFILL.key: {"candidate": ATEN.key, "compile_s": 9.0}}, trees=30)
    assert result["problems"] == 4 and result["slower_than_plain"] == []
    assert result["geomean_speedup_vs_plain"] > 1.4 and result["stock_compile_s"] == [9.0]
