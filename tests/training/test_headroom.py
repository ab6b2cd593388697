"""Headroom capture exactly right on a toy dataset whose answer is worked out by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from kselect.training.data.dataset import COLUMNS, conform
from kselect.training.learn.headroom import (
    capture_stats,
    fixed_selections,
    fold_spread,
    ranker_curves,
    shape_counts,
    shape_table,
    templates_plus_aten,
)
from kselect.training.learn.ranking_metrics import ShapeSet

TILE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_stages": 3}


def row(pk, M, N, ck, backend, template, t, **knobs):
    r = {c: None for c in COLUMNS}
    r.update(
        {
            "problem_key": pk,
            "op": "mm",
            "M": M,
            "N": N,
            "K": 64,
            "batch": 1,
            "dtype": "bf16",
            "layout": "nt",
            "model": "f",
            "candidate_key": ck,
            "backend": backend,
            "template": template,
            "status": "ok",
            "time_ms": t,
            "oracle": False,
            **knobs,
        }
    )
    return r


def toy():
    """a (M=8): ATen 1.0; t1 0.5 and t2 0.6 are one tile family (other warps), t3 0.8 another.
    b (M=64): ATen 1.0, u1 0.9, u2 1.2. c (M=1, decision-free): ATen 1.0, v1 0.5.
    d (M=512): ATen 1.0 is the best, w1 1.1. e (M=64, N=50257: Inductor pads N): ATen 1.0, x1 0.25.
    Ranking (lower first): a: t2, t1, t3, ATen; b: u2, u1, ATen; c: v1; d: w1; e: x1."""
    rows = [
        row("a", 8, 64, "aten:mm", "aten", "mm", 1.0),
        row("a", 8, 64, "t1", "triton", "mm", 0.5, num_warps=4, **TILE),
        row("a", 8, 64, "t2", "triton", "mm", 0.6, num_warps=8, **TILE),
        row("a", 8, 64, "t3", "triton", "mm", 0.8, num_warps=4, **{**TILE, "BLOCK_N": 128}),
        row("b", 64, 64, "aten:mm", "aten", "mm", 1.0),
        row("b", 64, 64, "u1", "triton", "mm", 0.9, num_warps=4, **TILE),
        row("b", 64, 64, "u2", "triton", "persistent_tma", 1.2, num_warps=4, **TILE),
        row("c", 1, 64, "aten:mm", "aten", "mm", 1.0),
        row("c", 1, 64, "v1", "triton", "mm", 0.5, num_warps=4, **TILE),
        row("d", 512, 64, "aten:mm", "aten", "mm", 1.0),
        row("d", 512, 64, "w1", "triton", "mm", 1.1, num_warps=4, **TILE),
        row("e", 64, 50257, "aten:mm", "aten", "mm", 1.0),
        row("e", 64, 50257, "x1", "triton", "mm", 0.25, num_warps=4, **TILE),
    ]
    shapes = ShapeSet.from_frame(conform(pd.DataFrame(rows)), default_keys=lambda r: {"t3", "u2", "w1"})
    rank = {"t2": 0, "t1": 1, "t3": 2, "u2": 0, "u1": 1, "v1": 0, "w1": 0, "x1": 0, "aten:mm": 9}
    cost = np.array([rank[k] for k in shapes.rows["candidate_key"]], dtype=float)
    return shapes, cost


def test_shape_table_splits_decision_free_and_classes():
    shapes, _ = toy()
    t = shape_table(shapes)
    assert list(shapes.keys) == ["a", "b", "c", "d", "e"]
    assert t["decision_free"].tolist() == [False, False, True, False, True]  # M = 1; N = 50257
    assert t["m_class"].tolist() == [0, 1, 0, 2, 1]
    assert t["aligned"].tolist() == [True, True, True, True, False]


def test_capture_by_hand():
    shapes, cost = toy()
    room = math.log(2.0) + math.log(1 / 0.9)  # realistic a, b, d (d has none)
    r = ranker_curves(shapes, cost, ks=(1, 2))
    k1 = r["aten_plus_k"][1]["realistic"]
    # ATen + 1 template: a times t2 (0.6; t1 is its family), b times u2 (1.2: ATen kept), d w1 (ATen kept)
    assert k1["capture"] == pytest.approx(math.log(1 / 0.6) / room)
    assert k1["worst_pick_over_aten"] == pytest.approx(1.0) and k1["share_slower_1pct"] == 0.0
    # + 2: a adds t3 (0.8, slower than t2), b adds u1 (0.9)
    k2 = r["aten_plus_k"][2]["realistic"]
    assert k2["capture"] == pytest.approx((math.log(1 / 0.6) + math.log(1 / 0.9)) / room)
    assert k2["geomean_pick_over_aten"] == pytest.approx((0.6 * 0.9 * 1.0) ** (1 / 3))
    # the ranking on its own at k = 1: a t2, b u2 (1.2x ATen), d w1 (1.1x)
    top1 = r["top_k"][1]["realistic"]
    assert top1["capture"] == pytest.approx((math.log(1 / 0.6) + math.log(1 / 1.2) + math.log(1 / 1.1)) / room)
    assert top1["worst_pick_over_aten"] == pytest.approx(1.2)
    assert top1["share_slower_1pct"] == pytest.approx(2 / 3)
    # decision-free shapes apart: c and e, both found at k = 1
    assert r["top_k"][1]["decision_free"]["capture"] == pytest.approx(1.0)
    assert r["top_k"][1]["decision_free"]["shapes"] == 2
    cls = r["aten_plus_k"][2]["classes"]
    assert cls["M<=16"]["capture"] == pytest.approx(math.log(1 / 0.6) / math.log(2.0))
    assert cls["16<M<=256"]["capture"] == pytest.approx(1.0)
    assert cls["M>256"]["capture"] is None and cls["M>256"]["shapes"] == 1  # no headroom at all
    assert r["aten_plus_k"][2]["alignment"]["unaligned"]["shapes"] == 0


def test_one_model_over_several_dtypes_reports_each_dtypes_capture():
    """Catches: dtypes pooled into one capture (a model that wins on bf16 and loses on tf32
    reads as fine), or a single-dtype report changed by the split."""
    shapes, cost = toy()
    assert "dtypes" not in ranker_curves(shapes, cost, ks=(1,))["aten_plus_k"][1]  # one dtype: as before
    frame = shapes.rows.copy()
    frame.loc[frame["problem_key"] == "b", "dtype"] = "tf32"  # b is a tf32 GEMM of the same size
    mixed = ShapeSet.from_frame(conform(frame), default_keys=lambda r: {"t3", "u2", "w1"})
    split = ranker_curves(mixed, cost, ks=(2,))["aten_plus_k"][2]
    by_dtype = split["dtypes"]
    assert sorted(by_dtype) == ["bf16", "tf32"]
    assert by_dtype["bf16"]["shapes"] == 2 and by_dtype["tf32"]["shapes"] == 1  # realistic only
    assert by_dtype["bf16"]["capture"] == pytest.approx(math.log(1 / 0.6) / math.log(2.0))  # a; d has none
    assert by_dtype["tf32"]["capture"] == pytest.approx(1.0)  # b: u1 found
    from kselect.training.learn.headroom_report import dtype_lines

    table = "\n".join(dtype_lines({"policies": {}, "fixed": fixed_selections(mixed)}))
    assert "| bf16 | 2 |" in table and "| tf32 | 1 |" in table
    assert dtype_lines({"policies": {}, "fixed": fixed_selections(shapes)}) == []


def test_capture_per_op_kind_beside_the_dtypes():
    """Catches: ops pooled into one capture, an op of one shape given a percentage, or a GEMM +
    epilogue group counted as its bare op."""
    from kselect.training.learn.headroom import headroom_section
    from kselect.training.learn.op_capture import op_table, shape_ops

    shapes, cost = toy()
    assert "ops" not in ranker_curves(shapes, cost, ks=(1,))["aten_plus_k"][1]  # one op: as before
    frame = shapes.rows.copy()
    frame.loc[frame["problem_key"] == "b", "op"] = "addmm"  # b: an addmm of the same size
    mixed = ShapeSet.from_frame(conform(frame), default_keys=lambda r: {"t3", "u2", "w1"})
    masks = [("x", np.array([1, 0, 1, 0, 0], bool)), ("y", np.array([0, 1, 0, 1, 1], bool))]
    ops = headroom_section(mixed, {"cost_model": cost}, masks, aten_gap=False)["realistic"]["ops"]
    assert list(ops) == ["mm", "addmm"]
    assert ops["mm"]["shapes"] == 2 and ops["addmm"]["shapes"] == 1  # realistic only: a, d; b
    # ATen + 4 on a times t2 and t3 (0.6 kept); d has no headroom
    assert ops["mm"]["aten_plus_k"]["cost_model"][4] == pytest.approx(math.log(1 / 0.6) / math.log(2.0))
    assert ops["addmm"]["aten_plus_k"]["cost_model"][4] is None  # one shape: its count alone
    assert ops["addmm"]["fixed"]["always_aten"] is None
    table = "\n".join(op_table(ops))
    assert "| mm | 2 | 73.7% |" in table and "| addmm | 1 | - | - | - | - |" in table
    # the op from the key where the rows carry none; a GEMM + epilogue group apart, pooled keys too
    keys = np.array(
        [
            "bmm4x:8x8x8:bf16:nn",
            "card/addmm:8x8x8:bf16:nn",
            "mm:8x8x8:bf16:nn+epi:0a1b",
            "card/scaled_mm:8x8x32:fp8e4m3:nt:rowwise:bf16",
            "scaled_mm:8x8x32:fp8e4m3:nt:tensorwise:fp32",
        ]
    )
    rows = pd.DataFrame({"op": ["", None, "mm", "scaled_mm", "scaled_mm"]})
    assert shape_ops(rows, np.arange(5), keys).tolist() == [
        "bmm",
        "addmm",
        "gemm+epilogue",
        "scaled_mm:rowwise",  # each scaling its own kind: a model may hold one alone
        "scaled_mm:tensorwise",
    ]


def test_without_the_family_rule_the_second_template_is_t1():
    shapes, cost = toy()
    assert templates_plus_aten(shapes, cost, 2, one_per_family=False)[0] == pytest.approx(0.5)
    assert templates_plus_aten(shapes, cost, 2)[0] == pytest.approx(0.6)
    per_shape = templates_plus_aten(shapes, cost, np.array([0, 2, 0, 0, 0]))
    assert per_shape.tolist() == pytest.approx([1.0, 0.9, 1.0, 1.0, 1.0])


def test_fixed_selections_and_counts():
    shapes, _ = toy()
    f = fixed_selections(shapes)
    assert f["always_aten"]["realistic"]["capture"] == 0.0
    # DEFAULT's list here: a t3 (0.8), b u2 (1.2, ATen kept), d w1 -> ATen
    assert f["default_idealised"]["realistic"]["capture"] == pytest.approx(
        math.log(1 / 0.8) / (math.log(2.0) + math.log(1 / 0.9))
    )
    c = shape_counts(shapes)
    assert c["realistic"]["shapes"] == 3 and c["decision_free"]["shapes"] == 2
    assert c["realistic"]["shapes_gain_ge_5pct"] == 2
    assert c["realistic"]["headroom_log_sum"] == pytest.approx(math.log(2.0) + math.log(1 / 0.9))


def test_fold_spread_and_bad_input():
    shapes, cost = toy()
    pick = templates_plus_aten(shapes, cost, 1)
    s = fold_spread(shapes, pick, [("x", np.array([1, 0, 1, 0, 0], bool)), ("y", np.array([0, 1, 0, 1, 1], bool))])
    assert s["per_fold"] == {"x": pytest.approx(math.log(1 / 0.6) / math.log(2)), "y": 0.0}
    assert s["spread"] == pytest.approx(math.log(1 / 0.6) / math.log(2))
    with pytest.raises(ValueError, match="differ in length"):
        capture_stats([1.0], [1.0, 2.0], [1.0])
    assert capture_stats([], [], [])["capture"] is None


def test_a_failed_pick_counts_as_atens_time():
    """A pick that failed (infinite time: it did not compile or run) is charged ATen's time, which
    the selector falls back to -- never the best template's. Two shapes with room log 2 each:
    the failed one gains nothing, the other the whole room, so half is captured.

    Fails on the mutation: a failed pick falling back to `best` instead of `aten` in capture_stats
    (training/learn/headroom.py), which read the failure as a full capture."""
    s = capture_stats(aten=[1.0, 2.0], best=[0.5, 1.0], pick=[math.inf, 1.0])
    assert s["capture"] == pytest.approx(0.5)
    assert s["worst_pick_over_aten"] == pytest.approx(1.0) and s["share_slower_1pct"] == 0.0
    assert s["geomean_pick_over_aten"] == pytest.approx(math.sqrt(0.5))
    nan = capture_stats(aten=[1.0], best=[0.5], pick=[math.nan])  # no time at all: the same fallback
    assert nan["capture"] == 0.0 and nan["worst_pick_over_aten"] == 1.0


def test_policies_simulated_on_gap_scores():
    from kselect.training.learn.headroom import headroom_section, simulate_policies

    shapes, _ = toy()
    gap = {"t2": -0.2, "t1": -0.1, "t3": 0.0, "u2": 0.1, "u1": 0.2, "v1": -0.3, "w1": 0.4, "x1": 0.35, "aten:mm": 0.0}
    cost = np.array([gap[k] for k in shapes.rows["candidate_key"]])
    sim = simulate_policies(shapes, cost)
    # a: gap -0.2 -> 4 asked, 2 families -> t2 0.6, t3 0.8; b: 0.1 -> 2: u2 1.2, u1 0.9; c: 4 -> v1; d, e: none
    assert sim["verify"].tolist() == pytest.approx([0.6, 0.9, 0.5, 1.0, 1.0])
    assert sim["verify_templates"].tolist() == [2, 2, 1, 0, 0]
    # predict takes a template only at a gap <= -0.15: a (t2) and c (v1)
    assert sim["predict"].tolist() == pytest.approx([0.6, 1.0, 0.5, 1.0, 1.0])
    folds_ = [("x", np.array([1, 0, 1, 0, 0], bool)), ("y", np.array([0, 1, 0, 1, 1], bool))]
    sec = headroom_section(shapes, {"cost_model": cost}, folds_, aten_gap=True, ks=(1, 2))
    room = math.log(2.0) + math.log(1 / 0.9)
    r = sec["realistic"]
    assert r["verify"] == pytest.approx((math.log(1 / 0.6) + math.log(1 / 0.9)) / room)
    assert r["predict"] == pytest.approx(math.log(1 / 0.6) / room)
    assert sec["decision_free"]["verify"] == pytest.approx(math.log(2.0) / (math.log(2.0) + math.log(4.0)))
    assert sec["detail"]["policies"]["verify"]["templates_timed_mean"] == pytest.approx(4 / 3)
    assert r["fixed"]["always_aten"] == 0.0
    assert r["classes"]["M<=16"]["verify"] == pytest.approx(math.log(1 / 0.6) / math.log(2.0))
    assert r["classes"]["16<M<=256"]["aten_plus_k"]["cost_model"][2] == pytest.approx(1.0)
    assert r["classes"]["M>256"]["verify"] is None and r["classes"]["M>256"]["shapes"] == 1
    assert r["fold_spread"]["verify"]["per_fold"]["y"] == pytest.approx(1.0)
    # a ranking model's scores are no gaps: no policy simulated
    assert headroom_section(shapes, {"cost_model": cost}, folds_, aten_gap=False)["realistic"]["verify"] is None


def test_the_report_renders_where_no_shape_is_realistic():
    """Only decision-free shapes: every realistic number is n/a, nothing raises."""
    from kselect.training.learn.headroom import headroom_section
    from kselect.training.learn.headroom_report import render_headroom, top_headroom_rows

    shapes, cost = toy()
    free = shapes.subset(shape_table(shapes)["decision_free"])
    cost = cost[shape_table(shapes)["decision_free"][shapes.sid]]
    folds_ = [("x", np.array([True, False])), ("y", np.array([False, True]))]
    sec = headroom_section(free, {"cost_model": cost}, folds_, aten_gap=True)
    assert sec["realistic"]["shapes"] == 0 and sec["realistic"]["verify"] is None
    md = render_headroom({"headroom_capture": {"family": sec}}, top_headroom_rows(free, {"cost_model": cost}, True))
    assert "| verify | n/a | n/a | n/a | n/a |" in md
