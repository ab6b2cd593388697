"""The selector's files on disk: decision-cache entries that are not decisions are repaired, cache
files get the umask's permissions, a model is saved whole or not at all, and every model load
error names the file. Real files, a real (tiny) XGBoost model, the real Selector."""

from __future__ import annotations

import json
import os
import stat
import warnings

import numpy as np
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.selector.decide.cache import DecisionCache
from kselect.selector.decide.rankers import MeasuredRanker
from kselect.selector.model.cost_model import CostModel, ModelError, meta_path
from kselect.selector.warn import KselectFallbackWarning, reset_warnings

PROBLEM = Problem(64, 80, 96, "fp32", "nn")
CANDS = [Candidate.make("aten", "mm"), Candidate.make("cpp", "gemm")]
TABLE = {PROBLEM.key: {"aten:mm": 2.0, "cpp:gemm": 1.0}}


def _selector(cache_dir):
    from kselect.selector.inductor.hook import Selector

    return Selector("predict", cache_dir=cache_dir, ranker=MeasuredRanker(TABLE))


def _decide(sel):
    fp = {"fingerprint_id": "cpu-test", "device_type": "cpu"}
    return sel.select("choices", PROBLEM, {"op": "mm", "out": [64, 80]}, fp, CANDS)[0]


@pytest.mark.parametrize("content", ["null", "[]", '"x"', "3", "\xff\xfe not UTF-8"])
def test_a_cache_entry_that_is_not_a_decision_is_decided_again_and_rewritten(tmp_path, content):
    first = _selector(tmp_path)
    assert _decide(first) == [1]
    first.cache.flush()
    (entry,) = list(tmp_path.rglob("*.json"))
    if content.startswith("\xff"):
        entry.write_bytes(b"\xff\xfe not UTF-8")
    else:
        entry.write_text(content)

    reset_warnings()
    sel = _selector(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _decide(sel) == [1] and _decide(sel) == [1]  # decided, not crashed
    ours = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(ours) == 1 and str(entry) in ours[0], ours  # one warning, naming the file
    assert sel.stats["cache_hits"] == 1 and sel.stats["decisions"] == 1  # the rewrite is read back
    sel.cache.flush()
    assert json.loads(entry.read_text())["kept"] == ["cpp:gemm"]  # repaired on disk
    assert DecisionCache(tmp_path).get(entry.stem) == ["cpp:gemm"]


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_cache_files_get_the_permissions_the_umask_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        DecisionCache(tmp_path).put("ab12", ["aten:mm"])
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "ab" / "ab12.json").stat().st_mode)
    assert mode == 0o666 & ~umask
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]


def _tiny_model(n_trees: int) -> CostModel:
    from kselect.selector.model.features import FEATURE_NAMES

    rng = np.random.default_rng(n_trees)
    X = rng.normal(size=(64, len(FEATURE_NAMES))).astype(np.float32)
    return CostModel(objective="reg:log", n_estimators=n_trees, max_depth=2, nthread=1).fit(X, X[:, 0])


def test_model_save_is_whole_or_nothing(tmp_path):
    path = tmp_path / "m.json"
    _tiny_model(3).save(path, {"dataset_hash": "first"})
    assert CostModel.load(path).n_trees == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.meta.json"]
    # a save that fails (its metadata cannot be written) leaves the saved model as it was
    with pytest.raises(TypeError):
        _tiny_model(5).save(path, {"dataset_hash": "second", "bad": object()})
    loaded = CostModel.load(path)
    assert loaded.n_trees == 3 and loaded.metadata_["dataset_hash"] == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.meta.json"]  # no temp files
    _tiny_model(5).save(path, {"dataset_hash": "second"})
    loaded = CostModel.load(path)
    assert loaded.n_trees == 5 and loaded.metadata_["dataset_hash"] == "second"


@pytest.mark.parametrize("sidecar", [b"[]", b"null", b'"x"', b"\xff\xfe\x00", b"{not json"])
def test_every_sidecar_load_error_names_the_file(tmp_path, sidecar):
    path = tmp_path / "m.json"
    _tiny_model(2).save(path)
    meta_path(path).write_bytes(sidecar)
    with pytest.raises(ModelError) as e:
        CostModel.load(path)
    assert str(meta_path(path)) in str(e.value)


@pytest.mark.parametrize("booster", [b"[]", b"\xff\xfe\x00"])
def test_a_booster_that_is_not_an_object_names_the_file(tmp_path, booster):
    path = tmp_path / "m.json"
    _tiny_model(2).save(path)
    path.write_bytes(booster)
    with pytest.raises(ModelError) as e:
        CostModel.load(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize("sidecar", [b"[]", b"\xff\xfe\x00"])
def test_a_compile_cost_sidecar_load_error_names_the_file(tmp_path, sidecar):
    from kselect.selector.model.compile_time_model import CompileCostModel

    path = tmp_path / "c.json"
    path.write_text("{}")
    meta_path(path).write_bytes(sidecar)
    with pytest.raises(ModelError) as e:
        CompileCostModel.load(path)
    assert str(meta_path(path)) in str(e.value)
