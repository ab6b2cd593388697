"""Compile cost: Triton compiles for sm_90 on this CPU, the collector, the fitted model, and
verify's price on a kept template's compile (compile_price.CompilePrice, the selector's wiring)."""

from __future__ import annotations

import csv
import json
import logging
import math

import numpy as np
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.backend import launch_plan
from kselect.kernels.triton.cross_compile import check_arch, compile_request, cross_compile, plan_to_dict
from kselect.kernels.triton.space import triton_space
from kselect.selector.decide.policy import choose_kept
from kselect.selector.model.compile_price import COMPILE_BUDGET, CompilePrice
from kselect.selector.model.compile_time_model import (
    COMPILE_FEATURES,
    CompileCostModel,
    compile_features,
    compile_fields,
    shipped_compile_cost,
)
from kselect.selector.model.cost_model import ModelError, meta_path
from kselect.training.cli.main import main
from kselect.training.compile_times.collect import H200_SMS, collect_compile_costs, collection_plans
from kselect.training.compile_times.fit import CompileDataError, fit_compile_cost, load_compile_times

from conftest import REPO

LM_HEAD = Problem(8, 128256, 4096, "bf16", "nt")
# verify's four kept lm_head families on the H200's one-layer decode (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3)
LM_HEAD_KEPT = (
    "triton:mm:BK128-BM16-BN256-G8-S3-W8",
    "triton:mm:BK128-BM16-BN64-G8-S4-W2",
    "triton:mm:BK128-BM16-BN128-G8-S4-W2",
    "triton:mm:BK256-BM16-BN128-G8-S3-W2",
)
DATA = REPO / "data" / "triton-compile-sm90"


def _lm_head_candidate(key: str) -> Candidate:
    return next(c for c in triton_space(LM_HEAD, "exhaustive") if c.key == key)


def test_cross_compile_builds_sm90_code_here_and_times_it():
    """No GPU here: Triton still lowers our kernels to sm_90 and runs ptxas; a bigger K step per
    thread gives more code."""
    small = cross_compile(launch_plan(_lm_head_candidate(LM_HEAD_KEPT[0]), LM_HEAD, H200_SMS))
    big = cross_compile(launch_plan(_lm_head_candidate(LM_HEAD_KEPT[3]), LM_HEAD, H200_SMS))
    tma = next(c for c in triton_space(LM_HEAD, "exhaustive") if c.template == "persistent_tma")
    persistent = cross_compile(launch_plan(tma, LM_HEAD, H200_SMS))
    for rec in (small, big, persistent):
        assert rec["cubin_bytes"] > 0 and rec["ptx_lines"] > 100
        assert rec["thread_cpu_ms"] > 0 and rec["ptxas_cpu_ms"] > 0 and rec["wall_ms"] > 0
    assert big["ptx_lines"] > small["ptx_lines"] and big["shared_bytes"] > small["shared_bytes"]


def test_bad_targets_and_plans_are_named():
    with pytest.raises(ValueError, match="sm90"):
        check_arch("sm90")
    plan = plan_to_dict(launch_plan(_lm_head_candidate(LM_HEAD_KEPT[0]), LM_HEAD, H200_SMS))
    plan["constexprs"] = [kv for kv in plan["constexprs"] if kv[0] != "BLOCK_K"]
    assert "BLOCK_K" in compile_request({"plan": plan, "arch": "sm_90"})["error"]


def test_collection_plans_cover_the_space_once_each():
    plans = collection_plans()
    ids = [pc.plan_id for pc in plans]
    assert len(ids) == len(set(ids)) == 3100 and ids == sorted(ids)
    keys = {pc.candidate.key for pc in plans if pc.problem.layout == "nt" and pc.problem.K == 4096}
    assert set(LM_HEAD_KEPT) <= keys and not any(pc.plan.template == "decompose_k" for pc in plans)
    assert {pc.problem.layout for pc in plans} == {"nt", "nn"}


def test_collect_appends_row_by_row_and_resumes(tmp_path, capsys):
    assert (
        main(["compile-cost", "collect", "--out", str(tmp_path), "--shard", "5/7", "--limit", "2", "--workers", "1"])
        == 0
    )
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["compiled"]["ok"] == 2 and first["already_done"] == 0
    collect_compile_costs(tmp_path, shard="5/7", limit=1, workers=1, log=lambda *_: None)
    with open(tmp_path / "compile_times-5of7.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and len({r["plan_id"] for r in rows}) == 3  # the resume compiled a new plan
    expected = [pc.plan_id for pc in collection_plans()[5::7][:3]]
    assert [r["plan_id"] for r in rows] == expected
    for r in rows:
        assert r["status"] == "ok" and r["arch"] == "sm_90"
        assert math.isclose(float(r["cpu_ms"]), float(r["thread_cpu_ms"]) + float(r["ptxas_cpu_ms"]))
    assert main(["compile-cost", "collect", "--out", str(tmp_path), "--shard", "7/7"]) == 2
    assert "--shard" in capsys.readouterr().err


def test_the_committed_compile_times_fit_a_model_that_ranks_compiles(tmp_path):
    out = tmp_path / "m.json"
    card = fit_compile_cost(DATA, out, folds=3)
    assert card["rows"] >= 3000
    assert card["cv"]["spearman"] > 0.9 and card["cv"]["median_abs_pct_err"] < 15
    model = CompileCostModel.load(out)
    df = load_compile_times(DATA).head(50)
    X = compile_features(df.to_dict("records"))
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(str(out))
    np.testing.assert_allclose(model.predict_ms(X), np.exp(booster.inplace_predict(X)), rtol=1e-5)
    assert out.with_suffix(".md").read_text().startswith("# Triton compile-cost model, sm_90")
    with pytest.raises(CompileDataError, match="no compile_times"):
        fit_compile_cost(tmp_path / "empty", out)


def test_broken_or_foreign_compile_cost_files_are_refused(tmp_path):
    shipped = shipped_compile_cost("sm_90")
    path = tmp_path / "c.json"
    path.write_text(shipped.path_.read_text())
    meta = json.loads(meta_path(shipped.path_).read_text())
    meta_path(path).write_text(json.dumps({**meta, "format": "kselect-cost-model/1"}))
    with pytest.raises(ModelError, match="not a compile-cost sidecar"):
        CompileCostModel.load(path)
    meta_path(path).write_text(json.dumps({**meta, "feature_names": meta["feature_names"][::-1]}))
    with pytest.raises(ModelError, match="other features"):
        CompileCostModel.load(path)
    meta_path(path).write_text(json.dumps(meta))
    path.write_text("{not json")
    with pytest.raises(ModelError, match="cannot read"):
        CompileCostModel.load(path)
    assert shipped_compile_cost("sm_75") is None


def test_shipped_model_prices_lm_heads_slow_tile_highest():
    """The H200's compile record put BK256 with two warps last of lm_head's four every time
    (0.83-1.22 s against 0.44-0.83 s); the shipped model, fitted on this CPU's compiles, agrees."""
    model = shipped_compile_cost("sm_90")
    ms = model.predict_for(LM_HEAD, [Candidate.make("aten", "mm")] + [_lm_head_candidate(k) for k in LM_HEAD_KEPT])
    assert ms[0] == 0.0
    assert int(np.argmax(ms[1:])) == 3 and ms[4] > 1.5 * max(ms[1:4])
    assert model.typical_ms == pytest.approx(model.metadata_["cpu_ms_quantiles"]["50"])
    assert compile_fields(LM_HEAD, Candidate.make("triton", "decompose_k", k_split=4)) is None
    assert (
        len(COMPILE_FEATURES)
        == compile_features([compile_fields(LM_HEAD, _lm_head_candidate(LM_HEAD_KEPT[0]))]).shape[1]
    )


def _price(ms, typical=100.0, budget=2.0):
    ms = np.asarray(ms, dtype=float)
    return CompilePrice(lambda idx: ms[np.asarray(idx, dtype=int)], typical, budget)


def test_compile_price_passes_over_slow_templates_for_the_next_candidate():
    cands = [
        Candidate.make("triton", "mm", BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_stages=3, num_warps=w)
        for bn, bk, w in ((256, 128, 8), (128, 256, 2), (128, 256, 8), (64, 128, 2), (32, 64, 4))
    ] + [Candidate.make("aten", "mm")]
    scores = np.array([0.0, 0.01, 0.02, 0.03, 0.04, 5.0])  # a close race: the cap, 3
    unpriced, _ = choose_kept(cands, scores, "verify", 3, True, False)
    assert unpriced == [0, 1, 3, 5]  # one per family: the W8 twin of #1 is not taken
    price = _price([150, 900, 200, 250, 120, 0])
    kept, why = choose_kept(cands, scores, "verify", 3, True, False, compile_price=price)
    # the limit is 2 x max(150, typical 100) = 300 ms: #1's slow W2 tile gives way to its W8 twin
    assert kept == [0, 2, 3, 5] and price.passed == [1]
    assert "passed over 1 slow to compile (triton:mm:BK256-BM16-BN128-G8-S3-W2)" in why
    # the top-1 is kept however slow; then others up to twice its cost
    kept, _ = choose_kept(cands, scores, "verify", 3, True, False, compile_price=_price([1000, 900, 2500, 250, 120, 0]))
    assert kept == [0, 1, 3, 5]
    # unknown costs are never passed over; nothing else changes where nothing is slow
    kept, _ = choose_kept(
        cands, scores, "verify", 3, True, False, compile_price=_price([150, math.nan, 200, 250, 1, 0])
    )
    assert kept == unpriced
    # with a backend the ranker has no data for, both reasons are told, each with its own names
    fly = Candidate.make("flydsl", "gemm", TILE_M=64)
    kept, why = choose_kept(
        cands + [fly],
        np.r_[scores, np.nan],
        "verify",
        3,
        True,
        False,
        unseen=[6],
        compile_price=_price([150, 900, 200, 250, 120, 0, math.nan]),
    )
    assert kept == [0, 2, 6, 5] and "unscored ['flydsl']" in why and "slow to compile (triton:mm:" in why
    # predict is untouched: its top-1 alone
    assert choose_kept(cands, scores, "predict", 3, True, False, compile_price=price)[0] == [0]
    with pytest.raises(ValueError, match="budget"):
        CompilePrice(lambda idx: np.zeros(len(idx)), 100.0, 0.0)


def test_verify_on_a_decode_projection_keeps_a_quicker_set_at_the_default_budget():
    """The shipped model's own decision on Llama-3-8B's gate projection at 8 decoding sequences
    (its scores are gaps to ATen, read as the selector reads them; on the CPU, without cuBLAS's
    kernel columns): the unpriced kept set holds a slow BK256 tile; priced, a quicker-compiling
    member of its family takes its place, and the set's slowest predicted compile falls by a third."""
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.discovery import load_shipped

    gate = Problem(8, 14336, 4096, "bf16", "nt")
    cands = [Candidate.make("aten", "mm")] + triton_space(gate, "exhaustive")
    ranker = CostModelRanker(load_shipped("h200-bf16.json"), None)
    scores = ranker.rank(gate, cands)
    gap = ranker.aten_gap_scores
    unpriced, _ = choose_kept(cands, scores, "verify", 4, True, False, aten_gap=gap)
    model = shipped_compile_cost("sm_90")
    price = CompilePrice(lambda idx: model.predict_for(gate, [cands[i] for i in idx]), model.typical_ms, COMPILE_BUDGET)
    kept, why = choose_kept(cands, scores, "verify", 4, True, False, compile_price=price, aten_gap=gap)
    keys = [cands[i].key for i in kept]
    slow = [cands[i].key for i in price.passed]
    assert slow and all("BK256" in k for k in slow) and not set(slow) & set(keys)
    assert {cands[i].key for i in price.passed} <= {cands[i].key for i in unpriced}
    assert keys[0] == cands[unpriced[0]].key and len(kept) == len(unpriced)
    # its place goes to another member of its family (8 warps, 3 stages): a quicker compile of the same tile
    assert "triton:mm:BK256-BM16-BN128-G8-S3-W8" in keys
    wait = model.predict_for(gate, [cands[i] for i in kept]).max()
    assert wait < model.predict_for(gate, [cands[i] for i in unpriced]).max() / 1.45
    assert "slow to compile" in why


def test_selector_prices_cuda_verify_only_and_survives_a_broken_model(tmp_path, monkeypatch, caplog):
    from kselect import models
    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.warn import KselectFallbackWarning, reset_warnings

    h200 = {"device_type": "cuda", "compute_capability": "9.0", "fingerprint_id": "x"}
    cands = [_lm_head_candidate(k) for k in LM_HEAD_KEPT]
    price = ksi.Selector("verify").pricing.price(h200, LM_HEAD, cands)
    assert price.budget == COMPILE_BUDGET and float(price.predict([3])[0]) > float(price.predict([0])[0])
    assert ksi.Selector("predict").pricing.price(h200, LM_HEAD, cands) is None
    sel = ksi.Selector("verify")
    assert sel.pricing.predicted_ms(LM_HEAD, cands) == {}  # no model loaded yet: no record
    sel.pricing.price(h200, LM_HEAD, cands)
    recorded = sel.pricing.predicted_ms(LM_HEAD, cands)  # what a measurement then records
    assert list(recorded) == list(LM_HEAD_KEPT) and max(recorded, key=recorded.get) == LM_HEAD_KEPT[3]
    assert ksi.Selector("verify", compile_budget=0).pricing.price(h200, LM_HEAD, cands) is None
    assert ksi.Selector("verify").pricing.price({"device_type": "cpu"}, LM_HEAD, cands) is None
    assert ksi.Selector("verify").pricing.price({**h200, "hip_version": "6.4"}, LM_HEAD, cands) is None
    with pytest.raises(ValueError, match="compile_budget"):
        ksi.Selector("verify", compile_budget=-1)
    broken = tmp_path / "models"
    broken.mkdir()
    (broken / "triton-compile-sm90.json").write_text("{}")  # its sidecar says sm_90; the trees are gone
    (broken / "triton-compile-sm90.meta.json").write_text(meta_path(shipped_compile_cost("sm_90").path_).read_text())
    monkeypatch.setattr(models, "MODELS_DIR", broken)
    reset_warnings()
    sel = ksi.Selector("verify")
    with caplog.at_level(logging.WARNING), pytest.warns(KselectFallbackWarning, match="compile-cost model"):
        assert sel.pricing.price(h200, LM_HEAD, cands) is None
        assert sel.pricing.price(h200, LM_HEAD, cands) is None
    assert sum("compile-cost model unusable" in r.getMessage() for r in caplog.records) == 1
