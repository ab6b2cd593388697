"""On a GPU: `kselect collect-epilogue`'s path on two bf16 GEMM + epilogue cases -- each pinned
to ATen and two stock Triton configs, compiled whole and timed -- into epilogue_labels.jsonl,
and a model trained with the epilogue block on those rows alone (training/data/epilogue_rows.py)
that loads back declaring the block and ranks the cases' candidates with their epilogue."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu_model import served_model  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_collect_epilogue_labels_and_train_with_the_block(tmp_path, monkeypatch):
    from kselect.kernels.candidate import Candidate
    from kselect.kernels.epilogue import NO_EPILOGUE
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel
    from kselect.training.data.epilogue_rows import epilogue_of, label_rows, read_records
    from kselect.training.learn.train import train
    from kselect.training.measure.epilogue_labels import collect_epilogue_labels
    from kselect.training.measure.hardware_record import collect_fingerprint
    from kselect.training.workloads.epilogues import EpilogueCase

    fingerprint, _ = served_model()
    # what a collection records and training featurises with (datasheet peaks and bandwidth beside
    # the identity); the served model is checked against the card's identity fingerprint
    recorded = collect_fingerprint(torch.cuda.current_device())
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    cases = [EpilogueCase("relu-mul", 64, 4096, 4096), EpilogueCase("bias-gelu", 512, 4096, 4096)]
    got = collect_epilogue_labels(cases, tmp_path / "data", "cuda", templates=2, repeats=20)
    assert got["cases"] == 2 and got["records"] == 6, got
    records = read_records(tmp_path / "data")
    ran = [r for r in records if not r["error"]]
    assert len(ran) >= 4, [r["error"] for r in records]
    for r in ran:  # the epilogue kselect read while Inductor lowered each GEMM
        assert r["ms"] > 0 and r["epilogue"]["fusable"] and r["problem"]["M"] in (64, 512), r
    rows = label_rows(tmp_path / "data")
    assert rows["problem_key"].nunique() == 2
    grid = ({"max_depth": 3, "learning_rate": 0.3, "n_estimators": 20, "min_child_weight": 1.0},)
    model, card = train(
        rows, recorded, "rank:pairwise", cv_folds=0, grid=grid, log=lambda *_: None, blocks=("epilogue",)
    )
    model.save(tmp_path / "epi.json", {"fingerprint": recorded, "training": card})
    loaded = CostModel.load(tmp_path / "epi.json", fingerprint=fingerprint)
    assert json.loads((tmp_path / "epi.meta.json").read_text())["feature_blocks"][0]["name"] == "epilogue"
    ranker = CostModelRanker(loaded, fingerprint)
    first = next(r for r in ran)
    cands = [Candidate.from_json(r["candidate"]) for r in records if r["case"] == first["case"] and r["candidate"]]
    problem = cases[0].problem() if first["case"] == cases[0].name else cases[1].problem()
    scores = ranker.rank(problem, cands, epilogue=epilogue_of(first["epilogue"]))
    assert np.isfinite(scores).all() and len(scores) == len(cands)
    assert ranker.rank(problem, cands, epilogue=NO_EPILOGUE).shape == scores.shape
