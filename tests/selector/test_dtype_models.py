"""A card's models of other dtypes join the model that serves it: on an H100 hopper-bf16 decides
bf16 and hopper-fp16-tf32 fp16 and TF32, each GEMM ranked by the model of its dtype; fp32,
which no shipped model holds, goes to stock."""

import json
from pathlib import Path

import numpy as np
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.config import SelectorSettings
from kselect.selector.decide.grouped_ranker import for_problem
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.inductor.device_rankers import DeviceRankers
from kselect.selector.model.discovery import dtype_models, load_shipped
from kselect.selector.model.features import device_constants

REPO = Path(__file__).resolve().parents[2]
H100 = json.loads((REPO / "data" / "h100-dtypes" / "data" / "fingerprint.json").read_text())


def _Rankers(**settings) -> DeviceRankers:
    """The rankers a verify Selector holds: the shipped models (or the one `model` gives), no warm start."""
    return DeviceRankers(SelectorSettings.from_keywords(mode="verify", compile_budget=0, **settings))


@pytest.fixture(scope="module")
def ranker():
    return _Rankers().ranker_for(dict(H100, device_type="cuda"))


def test_the_card_model_decides_bf16_and_the_dtype_model_fp16_and_tf32(ranker):
    """Fails if a model of other dtypes displaces the card's bf16 model, or is not joined."""
    assert load_shipped(fingerprint=H100).metadata_["booster_file"] == "hopper-bf16.json"
    joined = dtype_models(H100, ("bf16",))
    assert sorted(joined) == ["fp16", "tf32"] and joined["fp16"] is joined["tf32"]
    assert ranker.model.metadata_["booster_file"] == "hopper-bf16.json"
    assert ranker.own_dtypes == ("bf16",) and ranker.dtypes == ("bf16", "fp16", "tf32")
    for dtype in ("fp16", "tf32"):
        other = for_problem(ranker, Problem(512, 4096, 4096, dtype, "nt"))
        assert other is not ranker and other.model.metadata_["booster_file"] == "hopper-fp16-tf32.json"
    assert for_problem(ranker, Problem(512, 4096, 4096, "bf16", "nt")) is ranker  # bf16 as before


def test_each_dtype_is_ranked_by_its_own_model_and_fp32_goes_to_stock(ranker):
    """Fails if an fp16 GEMM is scored by the bf16 trees, or an fp32 one is scored at all."""
    fp16 = Problem(512, 4096, 4096, "fp16", "nt")
    candidates = [Candidate.make("aten", "mm")] + triton_space(fp16, "default")
    scores = for_problem(ranker, fp16).rank(fp16, candidates, probe=False)
    assert np.isfinite(scores).all()
    bf16_trees = ranker.rank(Problem(512, 4096, 4096, "bf16", "nt"), candidates, probe=False)
    assert not np.allclose(scores, bf16_trees)  # another model's trees (fp16 and bf16 features agree)
    with pytest.raises(RankerUnavailable, match="no fp16 data"):
        ranker.rank(fp16, candidates, probe=False)  # the bf16 model never scores fp16 itself
    fp32 = Problem(512, 4096, 4096, "fp32", "nt")
    assert "fp32" not in ranker.dtypes and for_problem(ranker, fp32) is ranker
    with pytest.raises(RankerUnavailable, match="no fp32 data"):
        ranker.rank(fp32, candidates, probe=False)


def test_a_named_model_decides_its_own_dtypes_alone():
    """Fails if the dtype models join a model the user gave: it decides what it holds, no more."""
    rankers = _Rankers(model=load_shipped("hopper-bf16.json", fingerprint=H100))
    got = rankers.ranker_for(dict(H100, device_type="cuda"))
    assert got.dtypes == ("bf16",) and got.by_dtype == {}


def test_tf32_takes_the_datasheet_peak_where_a_fingerprint_records_none():
    """Fails if a bf16 dataset's fingerprint (no TF32 peak) featurises TF32 at bf16's peak."""
    bf16_only = dict(H100, peak_tflops={k: v for k, v in H100["peak_tflops"].items() if k != "tf32"})
    assert device_constants(bf16_only, "tf32")["peak_tflops"] == H100["peak_tflops"]["tf32"] == 494.7
    assert device_constants(bf16_only, "bf16")["peak_tflops"] == 989.0


def test_warm_up_reaches_the_joined_models(ranker):
    """Fails if warming the serving ranker asks the bf16 trees to rank an fp16 class (it raises)."""
    ranked = ranker.warm_up([Problem(64, 4096, 4096, "fp16", "nt"), Problem(64, 4096, 4096, "fp32", "nt")])
    assert ranked  # the fp16 class, by the joined model; fp32 skipped


def test_predict_keeps_cublas_for_a_dtype_its_model_may_not_predict(tmp_path, monkeypatch):
    """Fails if predict takes a template for a dtype outside its model's `predict_dtypes` (TF32
    in the shipped model: its held-out predict capture was below zero), or if verify stops
    deciding such a dtype."""
    from kselect.selector.inductor.hook import Selector

    fingerprint = dict(H100, device_type="cuda")
    joined = _Rankers().ranker_for(fingerprint).by_dtype["tf32"]
    assert joined.predict_dtypes == ("fp16",) and joined.own_dtypes == ("fp16", "tf32")
    # an fp16 GEMM whose predicted gap takes a template, then the same with fp16 not predicted
    fp16 = Problem(50257, 768, 1, "fp16", "tn")
    candidates = [Candidate.make("aten", "mm")] + triton_space(fp16, "default")
    picks = {}
    for allowed in (("fp16",), ()):
        sel = Selector("predict", cache_dir=str(tmp_path / str(len(allowed))))
        monkeypatch.setattr(sel.ranker_for(fingerprint).by_dtype["fp16"], "predict_dtypes", allowed)
        kept, _ = sel.select("templates", fp16, {"op": "mm"}, fingerprint, candidates)
        picks[allowed] = [candidates[i].key for i in kept]
    assert picks[("fp16",)][0].startswith("triton:") and picks[()] == ["aten:mm"], picks
    assert "verify only" in sel.decisions[-1]["why"]
    tf32 = Problem(512, 4096, 4096, "tf32", "nt")
    candidates = [Candidate.make("aten", "mm")] + triton_space(tf32, "default")
    verify = Selector("verify", cache_dir=str(tmp_path / "verify"))
    kept, _ = verify.select("templates", tf32, {"op": "mm"}, fingerprint, candidates)
    assert len(kept) >= 2 and "aten:mm" in [candidates[i].key for i in kept]  # ATen + the model's few
