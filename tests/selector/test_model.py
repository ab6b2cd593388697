"""CostModel: fit/predict contract, JSON round trip, refusal of foreign devices and schemas."""

import json

import numpy as np
import pytest

from kselect.selector.model.checks import DeviceMismatchError, FeatureSchemaError
from kselect.selector.model.cost_model import CostModel, ModelError, meta_path
from kselect.selector.model.discovery import load_shipped, shipped_models
from kselect.selector.model.features import FEATURE_NAMES, featurize_frame
from kselect.training.data.synthetic import FINGERPRINT, synthetic_dataset
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.train import fit_model, sample_rows

FAST = {"n_estimators": 20, "max_depth": 4, "nthread": 1}


@pytest.fixture(scope="module")
def data():
    shapes = ShapeSet.from_frame(synthetic_dataset(n_shapes=8, n_oracle=2, sample=40))
    return shapes, featurize_frame(shapes.rows, FINGERPRINT)


@pytest.fixture(scope="module", params=["rank:pairwise", "reg:log"])
def fitted(request, data, tmp_path_factory):
    shapes, X = data
    model = fit_model(shapes, X, sample_rows(shapes), {**FAST, "objective": request.param})
    path = tmp_path_factory.mktemp("m") / "m.json"
    model.save(path, {"fingerprint": FINGERPRINT, "dataset_hash": "abc123", "training_command": "kselect train x"})
    return model, path, X


def test_estimator_contract(data):
    m = CostModel(objective="rank:ndcg", max_depth=3)
    assert not hasattr(m, "booster_") and m.get_params()["max_depth"] == 3
    with pytest.raises(ModelError, match="not fitted"):
        m.predict(np.zeros((1, len(FEATURE_NAMES))))
    shapes, X = data
    assert fit_model(shapes, X, sample_rows(shapes), {**FAST, "objective": "rank:ndcg"}).booster_ is not None
    with pytest.raises(ModelError, match="qid"):
        CostModel(objective="rank:pairwise").fit(X, np.zeros(len(X)))
    with pytest.raises(ModelError, match="unknown objective"):
        CostModel(objective="bogus").fit(X, np.zeros(len(X)))


def test_round_trip_identical_predictions(fitted):
    model, path, X = fitted
    loaded = CostModel.load(path, fingerprint=FINGERPRINT)
    assert np.array_equal(model.predict(X), loaded.predict(X))
    assert np.array_equal(loaded.predict(X), loaded.predict(X))  # pure
    assert loaded.objective == model.objective and loaded.get_params() == model.get_params()
    meta = json.loads(meta_path(path).read_text())
    assert meta["feature_names"] == list(FEATURE_NAMES)
    assert meta["fingerprint_id"] == FINGERPRINT["fingerprint_id"] and meta["gpu_name"] == FINGERPRINT["gpu_name"]
    assert meta["dataset_hash"] == "abc123" and meta["training_command"] == "kselect train x"
    assert json.loads(path.read_text())["learner"]  # XGBoost's own JSON, not a pickle


def test_rank_candidates_matches_predict(fitted):
    from kselect.kernels.candidate import Candidate
    from kselect.kernels.problem import Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.selector.model.features import featurize_candidates, infeasible

    model, path, _ = fitted
    loaded = CostModel.load(path, fingerprint=FINGERPRINT)
    loaded.set_params(cascade_keep=0)  # every feasible row scored by the whole model
    p = Problem(333, 4096, 4096)
    cands = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
    top = loaded.rank_candidates(p, cands, k=4)
    X = featurize_candidates(p, cands, FINGERPRINT)
    cost = loaded.selection_cost(X)
    assert len(top) == 4 and [cost[cands.index(c)] for c in top] == sorted(cost)[:4]
    bad = infeasible(X)
    assert bad.any() and np.isinf(cost[bad]).all() and np.array_equal(cost[~bad], loaded.predict(X[~bad]))


def test_refuses_foreign_device(fitted):
    _, path, X = fitted
    foreign = {**FINGERPRINT, "gpu_name": "NVIDIA A100-SXM4-80GB", "sm_count": 108, "fingerprint_id": "a100"}
    with pytest.raises(DeviceMismatchError, match="A100"):
        CostModel.load(path, fingerprint=foreign)
    with pytest.raises(DeviceMismatchError, match="sm_count"):
        CostModel.load(path, fingerprint={**FINGERPRINT, "sm_count": 114})
    assert CostModel.load(path, fingerprint=foreign, force=True).predict(X[:3]).shape == (3,)


def test_refuses_schema_mismatch(fitted, tmp_path):
    _, path, X = fitted
    for change in ({"feature_schema_version": 0}, {"feature_names": list(FEATURE_NAMES)[::-1]}):
        target = tmp_path / f"s{len(str(change))}.json"
        target.write_text(path.read_text())
        meta = json.loads(meta_path(path).read_text())
        meta.update(change)
        meta_path(target).write_text(json.dumps(meta))
        with pytest.raises(FeatureSchemaError, match="feature schema"):
            CostModel.load(target, fingerprint=FINGERPRINT, force=True)
    with pytest.raises(FeatureSchemaError):
        CostModel.load(path).predict(X[:, :-1])


def test_bad_files_are_errors_not_crashes(tmp_path, fitted):
    _, path, _ = fitted
    with pytest.raises(ModelError, match="does not exist"):
        CostModel.load(tmp_path / "nope.json")
    lonely = tmp_path / "lonely.json"
    lonely.write_text(path.read_text())
    with pytest.raises(ModelError, match="sidecar"):
        CostModel.load(lonely)
    junk = tmp_path / "junk.json"
    junk.write_text("{not xgboost")
    meta_path(junk).write_text(meta_path(path).read_text())
    with pytest.raises(ModelError):
        CostModel.load(junk)


def test_shipped_models_load_for_their_device_only():
    foreign = {"gpu_name": "Some Other GPU", "sm_count": 7}
    with pytest.raises(DeviceMismatchError, match="no shipped model"):
        load_shipped(fingerprint=foreign)
    for path in shipped_models():
        meta = json.loads(meta_path(path).read_text())
        model = load_shipped(path.name, fingerprint=meta["fingerprint"])
        assert model.booster_.num_boosted_rounds() > 0
        with pytest.raises(DeviceMismatchError):
            load_shipped(path.name, fingerprint=foreign)


def test_cascade_rescores_the_stage_one_best(data):
    from kselect.selector.model.features import infeasible

    shapes, X = data
    model = fit_model(shapes, X, sample_rows(shapes), {**FAST, "n_estimators": 30, "objective": "rank:pairwise"})
    model.set_params(cascade_trees=5, cascade_keep=16)
    cost = model.selection_cost(X)
    ok = ~infeasible(X)
    assert np.isinf(cost[~ok]).all()
    full = model.predict(X)
    rescored = np.isin(cost, full) & ok
    assert rescored.sum() == 16  # exactly cascade_keep rows get the whole model
    assert cost[ok & ~rescored].min() > cost[rescored].max()  # everything else ranks behind them
    model.set_params(cascade_keep=0)
    assert np.array_equal(model.selection_cost(X)[ok], full[ok])


def test_evaluation_cascades_each_shape_on_its_own(data):
    """Held-out metrics rank each shape's rows apart, as the selector ranks one GEMM at a time:
    every shape gets its own cascade_keep rows re-scored by the whole model."""
    from kselect.selector.model.features import infeasible
    from kselect.training.learn.train import per_shape_selection_cost

    shapes, X = data
    model = fit_model(shapes, X, sample_rows(shapes), {**FAST, "n_estimators": 30, "objective": "rank:pairwise"})
    model.set_params(cascade_trees=5, cascade_keep=4)
    got = per_shape_selection_cost(model, shapes.sid, X)
    full = model.predict(X)
    for s in np.unique(shapes.sid):
        rows = np.flatnonzero(shapes.sid == s)
        assert np.array_equal(got[rows], model.selection_cost(X[rows]))
        ok = ~infeasible(X[rows])
        if ok.sum() > 4:
            assert (np.isin(got[rows], full[rows]) & ok).sum() == 4  # 4 re-scored rows per shape
    # over all rows at once only 4 rows in total would get the whole model
    assert (np.isin(model.selection_cost(X), full) & ~infeasible(X)).sum() == 4
