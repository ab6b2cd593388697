"""forest.TreeEnsemble: numpy trees equal XGBoost's predictions bit for bit; serving a model
imports no xgboost; what it cannot evaluate goes to xgboost."""

import json
import subprocess
import sys

import numpy as np
import pytest

from kselect.selector.model.cost_model import CostModel, ModelError
from kselect.selector.model.features import FEATURE_NAMES, featurize_frame
from kselect.selector.model.forest import TreeEnsemble, UnsupportedModel
from kselect.training.data.synthetic import FINGERPRINT, synthetic_dataset
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.train import fit_model, sample_rows

FAST = {"n_estimators": 30, "max_depth": 6, "nthread": 1}


@pytest.fixture(scope="module")
def data():
    shapes = ShapeSet.from_frame(synthetic_dataset(n_shapes=10, n_oracle=2, sample=60))
    return shapes, featurize_frame(shapes.rows, FINGERPRINT)


def _with_missing(X: np.ndarray) -> np.ndarray:
    """Rows with NaN in the columns the trees split on most (the default directions decide)
    and +-inf in others (ordinary values to XGBoost; +inf must not walk past a leaf)."""
    X = np.array(X, dtype=np.float32)
    cols = np.argsort(-np.nanstd(X, axis=0))[:8]
    X[::3, cols[0]] = np.nan
    X[1::4, cols[1:3]] = np.nan
    X[2::5, cols[3:6]] = np.nan
    X[::2, cols[6]] = np.inf
    X[1::3, cols[7]] = -np.inf
    X[::7, 0] = np.inf  # column 0 is what a leaf reads
    return X


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise", "reg:log"])
def test_numpy_trees_equal_xgboost_bit_for_bit(data, tmp_path, objective):
    shapes, X = data
    fitted = fit_model(shapes, X, sample_rows(shapes), {**FAST, "objective": objective})
    path = tmp_path / "m.json"
    fitted.save(path, {"fingerprint": FINGERPRINT})
    loaded = CostModel.load(path)
    assert "forest_" in loaded.__dict__ and "_booster" not in loaded.__dict__  # serving: no booster
    booster = fitted.booster_
    for rows in (np.asarray(X, dtype=np.float32), _with_missing(X), np.asarray(X, dtype=np.float32)[:1]):
        assert np.array_equal(loaded.forest_.margin(rows), booster.inplace_predict(rows, validate_features=False))
        for its in ((0, 5), (3, 17), (29, 30)):
            assert np.array_equal(
                loaded.forest_.margin(rows, its),
                booster.inplace_predict(rows, iteration_range=its, validate_features=False),
            )
        assert np.array_equal(loaded.predict(rows), fitted.predict(rows))
        assert np.array_equal(loaded.selection_cost(rows), fitted.selection_cost(rows))
    assert loaded.n_trees == fitted.n_trees == 30
    # asking for the booster reads the file with xgboost: the same trees
    assert np.array_equal(loaded.booster_.inplace_predict(X, validate_features=False), loaded.forest_.margin(X))


def test_shipped_model_serves_without_importing_xgboost():
    """A fresh process loads the shipped model and ranks a GEMM's whole space: xgboost (and
    the scikit-learn it imports) never load."""
    code = (
        "import sys, numpy as np\n"
        "from kselect.selector.model.discovery import load_shipped\n"
        "from kselect.kernels.problem import Problem\n"
        "from kselect.kernels.candidate import Candidate\n"
        "from kselect.kernels.triton.space import triton_space\n"
        "from kselect.selector.model.features import featurize_candidates\n"
        "m = load_shipped('h200-bf16.json')\n"
        "p = Problem(777, 4608, 3584, 'bf16', 'nt')\n"
        "c = [Candidate.make('aten', 'mm')] + triton_space(p, 'exhaustive')\n"
        "cost = m.selection_cost(featurize_candidates(p, c, m.fingerprint))\n"
        "print(len(c), int(np.isfinite(cost).sum()), 'xgboost' in sys.modules, 'sklearn' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    n, finite, xgb, skl = out.stdout.split()
    assert int(n) > 1000 and int(finite) > 1000 and xgb == "False" and skl == "False", out.stdout


def test_shipped_model_ranks_exactly_as_xgboost():
    from kselect.kernels.candidate import Candidate
    from kselect.kernels.problem import Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.selector.model.discovery import load_shipped
    from kselect.selector.model.features import featurize_candidates

    served = load_shipped("h200-bf16.json")
    with_xgb = load_shipped("h200-bf16.json")
    with_xgb.booster_ = with_xgb.booster_  # the xgboost booster, the numpy trees dropped
    assert "forest_" not in with_xgb.__dict__ and "forest_" in served.__dict__
    for p in (
        Problem(777, 4608, 3584, "bf16", "nt"),
        Problem(8, 128256, 4096, "bf16", "nt"),
        Problem(100, 3072, 3072, "bf16", "tn"),
        Problem(1500, 3584, 28672, "bf16", "nn"),
    ):
        cands = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
        X = featurize_candidates(p, cands, served.fingerprint)
        assert np.array_equal(served.selection_cost(X), with_xgb.selection_cost(X))


def _tiny_model(objective="rank:ndcg", split_type=0, right=2) -> dict:
    """A one-tree XGBoost JSON model: x0 < 0.5 -> 1.0 else 2.0 (missing goes right)."""
    tree = {
        "id": 0,
        "left_children": [1, -1, -1],
        "right_children": [right, -1, -1],
        "split_indices": [0, 0, 0],
        "split_conditions": [0.5, 1.0, 2.0],
        "default_left": [0, 0, 0],
        "split_type": [split_type, 0, 0],
        "categories_nodes": [],
        "tree_param": {"size_leaf_vector": "1"},
    }
    return {
        "learner": {
            "objective": {"name": objective},
            "learner_model_param": {"base_score": "[1E-1]", "num_class": "0", "num_target": "1", "num_feature": "2"},
            "gradient_booster": {"name": "gbtree", "model": {"trees": [tree], "iteration_indptr": [0, 1]}},
        }
    }


def test_split_rule_missing_values_and_base_score():
    forest = TreeEnsemble(_tiny_model())
    X = np.array([[0.2, 9.0], [0.5, 0.0], [np.nan, 1.0], [0.4999, 3.0]], dtype=np.float32)
    assert forest.margin(X).tolist() == pytest.approx([1.1, 2.1, 2.1, 1.1])  # x < 0.5 left; NaN: default
    with pytest.raises(ValueError, match="features"):
        forest.margin(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="iteration_range"):
        forest.margin(X, (0, 2))


@pytest.mark.parametrize(
    "change, match",
    [
        ({"objective": "reg:logistic"}, "transforms the margin"),
        ({"split_type": 1}, "categorical"),
        ({"right": 1}, "right = left"),
    ],
)
def test_what_numpy_does_not_evaluate_is_refused(change, match):
    with pytest.raises(UnsupportedModel, match=match):
        TreeEnsemble(_tiny_model(**change))
    with pytest.raises(UnsupportedModel, match="not an XGBoost JSON model"):
        TreeEnsemble({"trees": []})
    broken = _tiny_model()
    del broken["learner"]["gradient_booster"]["model"]["trees"][0]["default_left"]
    with pytest.raises(UnsupportedModel, match="malformed"):
        TreeEnsemble(broken)


def test_a_model_numpy_refuses_is_served_by_xgboost(data, tmp_path):
    """UBJ, or a JSON model TreeEnsemble refuses (here: a sigmoid objective), still loads --
    through xgboost -- and predicts what xgboost predicts."""
    import shutil

    import xgboost as xgb

    shapes, X = data
    fitted = fit_model(shapes, X, sample_rows(shapes), {**FAST, "objective": "rank:pairwise"})
    fitted.save(tmp_path / "m.json", {"fingerprint": FINGERPRINT})
    fitted.booster_.save_model(str(tmp_path / "u.ubj"))
    shutil.copy(tmp_path / "m.meta.json", tmp_path / "u.meta.json")
    from_ubj = CostModel.load(tmp_path / "u.ubj")
    assert "forest_" not in from_ubj.__dict__
    assert np.array_equal(from_ubj.predict(X), fitted.predict(X))

    raw = json.loads((tmp_path / "m.json").read_text())
    raw["learner"]["objective"] = {"name": "reg:logistic", "reg_loss_param": {"scale_pos_weight": "1"}}
    (tmp_path / "s.json").write_text(json.dumps(raw))
    shutil.copy(tmp_path / "m.meta.json", tmp_path / "s.meta.json")
    sigmoid = CostModel.load(tmp_path / "s.json")
    assert "forest_" not in sigmoid.__dict__
    reference = xgb.Booster()
    reference.load_model(str(tmp_path / "s.json"))
    assert np.array_equal(sigmoid.predict(X), -reference.inplace_predict(np.asarray(X, dtype=np.float32)))


def test_truncated_json_model_is_a_clear_error(tmp_path, data):
    shapes, X = data
    fitted = fit_model(shapes, X, sample_rows(shapes), {**FAST, "n_estimators": 3})
    path = tmp_path / "m.json"
    fitted.save(path, {"fingerprint": FINGERPRINT})
    path.write_text(path.read_text()[:200])
    with pytest.raises(ModelError, match="cannot read XGBoost model .*not valid JSON"):
        CostModel.load(path)
    assert len(FEATURE_NAMES) == X.shape[1]


def test_child_indices_and_node_arrays_must_describe_one_tree():
    """The forest is built from all trees at once, so a child index must stay inside its own
    tree and every node array must have one entry per node: anything else is refused."""

    def tree_of(model):
        return model["learner"]["gradient_booster"]["model"]["trees"][0]

    outside = _tiny_model()
    tree_of(outside).update(left_children=[3, -1, -1], right_children=[4, -1, -1])
    with pytest.raises(UnsupportedModel, match="outside its tree"):
        TreeEnsemble(outside)
    short = _tiny_model()
    tree_of(short)["split_conditions"] = [0.5, 1.0]
    with pytest.raises(UnsupportedModel, match="differ in length"):
        TreeEnsemble(short)
    # two trees of different depths: each walks its own nodes (ids offset per tree)
    two = _tiny_model()
    deeper = {
        "id": 1,
        "left_children": [1, 3, -1, -1, -1],
        "right_children": [2, 4, -1, -1, -1],
        "split_indices": [1, 0, 0, 0, 0],
        "split_conditions": [5.0, 0.5, 30.0, 10.0, 20.0],
        "default_left": [0, 0, 0, 0, 0],
        "split_type": [0] * 5,
        "categories_nodes": [],
        "tree_param": {"size_leaf_vector": "1"},
    }
    model = two["learner"]["gradient_booster"]["model"]
    model["trees"].append(deeper)
    model["iteration_indptr"] = [0, 1, 2]
    forest = TreeEnsemble(two)
    X = np.array([[0.2, 1.0], [0.7, 1.0], [0.2, 9.0]], dtype=np.float32)
    # tree 0: x0 < 0.5 -> 1 else 2; tree 1: x1 < 5 -> (x0 < 0.5 -> 10 else 20) else 30; base 0.1
    assert forest.margin(X).tolist() == pytest.approx([11.1, 22.1, 31.1])
    assert forest._depths.tolist() == [1, 2]
