"""Verify's budget model (selector/model/reach.py): the H200's ships beside h200-bf16 and sets how
many templates verify times; one trained beside another version of its cost model, or that cannot
be read, sends the card's GEMMs to stock (a broken model), never to a budget it was not made for."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.config import SelectorSettings
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.inductor.device_rankers import DeviceRankers
from kselect.selector.model.artifact import ModelError, sidecar_path
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.reach import REACH_TIERS, ReachModel, reach_path

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models"
H200 = json.loads((REPO / "data" / "h200-bf16" / "fingerprint.json").read_text())


def _copy(tmp_path, *names) -> Path:
    for name in names:
        for p in (MODELS / name, sidecar_path(MODELS / name)):
            shutil.copy(p, tmp_path / p.name)
    return tmp_path / names[0]


def _edit_sidecar(path: Path, **fields) -> None:
    meta = json.loads(sidecar_path(path).read_text())
    meta.update(fields)
    sidecar_path(path).write_text(json.dumps(meta))


def test_the_h200_model_ships_with_its_reach_model_and_hopper_bf16_without():
    """Fails if the shipped reach model does not load beside its cost model, or one appears beside
    the H100's model (whose data left it nothing to save)."""
    reach = ReachModel.beside(CostModel.load(MODELS / "h200-bf16.json"))
    assert reach is not None and reach.tiers == REACH_TIERS and reach.aten_gap_max == 0.7
    assert ReachModel.beside(CostModel.load(MODELS / "hopper-bf16.json")) is None
    assert ReachModel.beside(CostModel(objective="reg:aten")) is None  # not read from a file: none


def test_verify_ranks_with_the_cost_model_and_budgets_with_the_reach_model():
    """Fails if the reach model's scores displace the cost model's, or verify never reads them."""
    ranker = DeviceRankers(SelectorSettings.from_keywords(mode="verify", compile_budget=0)).ranker_for(
        dict(H200, device_type="cuda")
    )
    assert ranker.reach is not None and ranker.reach.ident in ranker.ident  # a decision's cache key holds it
    problem = Problem(777, 37888, 3584, "bf16", "nt")
    candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    scores, gaps = ranker.rank_with_reach(problem, candidates)
    assert np.array_equal(scores, ranker.rank(problem, candidates), equal_nan=True)
    assert np.isfinite(gaps).sum() > 100 and not np.allclose(gaps, scores, equal_nan=True)
    assert np.nanmax(gaps) > 0.3 + 1e-3  # a clip above the cost model's: it can say "far past ATen"


def test_a_reach_model_of_another_cost_model_version_is_refused(tmp_path):
    """Fails if a reach model trained beside an older cost model still budgets its successor."""
    model = _copy(tmp_path, "h200-bf16.json", "h200-bf16.reach.json")
    meta = json.loads(sidecar_path(reach_path(model)).read_text())
    _edit_sidecar(reach_path(model), beside={**meta["beside"], "sha256": "0" * 64})
    with pytest.raises(ModelError, match="retrain it with `kselect train-reach`"):
        ReachModel.beside(CostModel.load(model))


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"kind": "cost-model"}, "is not a reach-model sidecar"),
        ({"verify_tiers": [[0.6, 4], [0.4, 1]]}, "ascending"),
        ({"hyper_parameters": {"objective": "rank:ndcg"}}, "objective reg:aten"),
    ],
    ids=["kind", "tiers", "objective"],
)
def test_a_broken_reach_model_sends_the_card_to_stock_with_a_reason(tmp_path, fields, says):
    """Fails if a reach model that cannot serve is skipped silently (verify then times what no
    model chose) or crashes the compile: the ranker is unavailable, its reason names the file."""
    model = _copy(tmp_path, "h200-bf16.json", "h200-bf16.reach.json")
    _edit_sidecar(reach_path(model), **fields)
    with pytest.raises(ModelError, match=says):
        ReachModel.beside(CostModel.load(model))
    rankers = DeviceRankers(SelectorSettings.from_keywords(mode="verify", compile_budget=0, model=str(model)))
    with pytest.raises(RankerUnavailable, match="h200-bf16.reach") as got:
        rankers.ranker_for(dict(H200, device_type="cuda"))
    assert "stock autotuning" in str(got.value)
