"""Across cards: pooling two cards' datasets, held-out splits that train on the other card too,
a model scored as is on another card's data (featurised with that card), and the bootstrap
that says whether two captures differ beyond noise."""

import json
from pathlib import Path

import numpy as np
import pytest

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import FEATURE_NAMES, featurize_frame
from kselect.training.cli.main import main as cli_main
from kselect.training.data.dataset import conform
from kselect.training.data.synthetic import FINGERPRINT, synthetic_dataset
from kselect.training.learn.capture_bootstrap import bootstrap_captures, group_captures, selection_picks
from kselect.training.learn.headroom import capture_stats, shape_table
from kselect.training.learn.nearest_table import preference_cost
from kselect.training.learn.pooled import Devices, PoolingError, card_keys, pool
from kselect.training.learn.ranking_metrics import EvaluationError, ShapeSet, held_out_costs, split_costs
from kselect.training.learn.train import per_shape_selection_cost
from kselect.training.learn.transfer import card_splits, model_nearest_table, score_as_is

# a second synthetic card: an H100-like bandwidth and L2 beside the synthetic H200-like one
OTHER = {
    **FINGERPRINT,
    "gpu_name": "SYNTHETIC H100-like",
    "mem_bandwidth_gbs": 3350.0,
    "l2_cache_bytes": 50 * 2**20,
    "fingerprint_id": "synthetic1111111",
}
_COL = {name: j for j, name in enumerate(FEATURE_NAMES)}


@pytest.fixture(scope="module")
def cards():
    """Two cards' (rows, fingerprint): the same synthetic shapes, the second card's templates
    timed 10 % slower (so its labels differ too)."""
    a = synthetic_dataset(n_shapes=12, n_oracle=1, sample=30)
    b = a.copy()
    b["time_ms"] = np.where(b["backend"] == "aten", b["time_ms"], b["time_ms"] * 1.1)
    b["fingerprint_id"] = OTHER["fingerprint_id"]
    return (a, FINGERPRINT), (b, OTHER)


def write_dataset(root: Path, df, fp) -> Path:
    root.mkdir(parents=True)
    conform(df).to_parquet(root / "measurements.parquet", index=False)
    (root / "fingerprint.json").write_text(json.dumps(fp))
    return root


@pytest.fixture(scope="module")
def trained(cards, tmp_path_factory):
    """Both cards' dataset directories and a reg:aten model trained on the first (`kselect train`)."""
    tmp = tmp_path_factory.mktemp("transfer")
    (a, fa), (b, fb) = cards
    data_a, data_b = write_dataset(tmp / "a", a, fa), write_dataset(tmp / "b", b, fb)
    model = tmp / "a-model"
    argv = ["--quiet", "train", "--data", str(data_a), "--out", str(model), "--objective", "reg:aten"]
    assert cli_main([*argv, "--grid", "headroom", "--nthread", "1"]) == 0
    return data_a, data_b, CostModel.load(f"{model}.json"), Path(f"{model}.json")


def test_pool_keeps_each_card_apart_and_featurises_its_rows_with_its_own_fingerprint(cards):
    (a, fa), (b, fb) = cards
    rows, devices = pool([(a, fa), (b, fb)])
    shapes = ShapeSet.from_frame(rows)
    assert shapes.n_shapes == 2 * ShapeSet.from_frame(a).n_shapes  # a shape on two cards is two shapes
    card, own_key = card_keys(shapes.keys)
    assert set(card) == {fa["fingerprint_id"], fb["fingerprint_id"]}
    assert set(own_key) == set(a["problem_key"])
    X = devices.featurize(shapes.rows)
    for fp in (fa, fb):
        mine = (shapes.rows["fingerprint_id"] == fp["fingerprint_id"]).to_numpy()
        assert np.array_equal(X[mine], featurize_frame(shapes.rows[mine], fp), equal_nan=True)
        assert set(X[mine, _COL["mem_bandwidth_gbs"]]) == {fp["mem_bandwidth_gbs"]}
    # what tells the cards apart in the schema: bandwidth and L2 (the SMs, peaks and shared memory agree)
    assert set(devices.differing()) == {"mem_bandwidth_gbs", "l2_mbytes"}


def test_pool_refuses_one_card_twice_and_a_fingerprint_without_an_id(cards):
    (a, fa), _ = cards
    with pytest.raises(PoolingError, match="same card"):
        pool([(a, fa), (a, fa)])
    with pytest.raises(PoolingError, match="fingerprint_id"):
        pool([(a, {k: v for k, v in fa.items() if k != "fingerprint_id"})])
    rows, _ = pool([(a, fa)])
    with pytest.raises(PoolingError, match="no fingerprint"):
        Devices({}).featurize(rows)


def test_split_costs_is_held_out_costs_for_complementary_splits_and_refuses_leaks(cards):
    (a, fa), _ = cards
    shapes = ShapeSet.from_frame(a)
    X = featurize_frame(shapes.rows, fa)
    from kselect.training.learn.baselines import NearestShapeRanker
    from kselect.training.learn.ranking_metrics import folds

    fam = folds(shapes, "family")
    same = split_costs(shapes, X, NearestShapeRanker, [(n, ~t, t) for n, t in fam])
    assert np.array_equal(same, held_out_costs(shapes, X, NearestShapeRanker, "family"), equal_nan=True)
    name, test = fam[0]
    with pytest.raises(EvaluationError, match="trains on"):
        split_costs(shapes, X, NearestShapeRanker, [(name, np.ones_like(test), test)])
    with pytest.raises(EvaluationError, match="earlier split"):
        split_costs(shapes, X, NearestShapeRanker, [(name, ~test, test), ("again", ~test, test)])


@pytest.mark.parametrize("training_set", ["own", "pooled", "pooled_family_out"])
def test_card_splits_test_each_family_of_one_card_and_train_on_what_the_set_says(cards, training_set):
    (a, fa), (b, fb) = cards
    rows, _ = pool([(a, fa), (b, fb)])
    shapes = ShapeSet.from_frame(rows)
    on = card_keys(shapes.keys)[0] == fb["fingerprint_id"]
    splits = card_splits(shapes, fb["fingerprint_id"], training_set)
    tests = np.array([t for _, _, t in splits])
    assert np.array_equal(tests.sum(axis=0), on.astype(int))  # every shape of the card tested once
    for _, train, test in splits:
        held = set(shapes.family[test])
        assert len(held) == 1 and not (train & test).any()
        other_card = ~on
        if training_set == "own":
            assert not (train & other_card).any() and (train | test)[on].all()
        elif training_set == "pooled":
            assert train[other_card].all() and (train | test)[on].all()
        else:  # the held-out family on no card, everything else on both
            assert np.array_equal(train, ~np.isin(shapes.family, list(held)))
    with pytest.raises(EvaluationError, match="holds families out"):
        card_splits(shapes, fb["fingerprint_id"], "pooled_family_out", scheme="shape")
    with pytest.raises(EvaluationError, match="no shape of card"):
        card_splits(shapes, "nobody", "own")


@pytest.mark.parametrize("device_features", ["data", "model"])
def test_score_as_is_scores_the_model_itself_featurised_with_the_chosen_card(trained, cards, device_features):
    _, _, model, _ = trained
    _, (b, fb) = cards
    result, costs, shapes = score_as_is(b, fb, model, "family", device_features=device_features)
    device = fb if device_features == "data" else FINGERPRINT
    assert result["featurised_with"]["fingerprint_id"] == device["fingerprint_id"]
    assert result["scored_on"]["gpu_name"] == OTHER["gpu_name"]
    assert result["trained_on"]["gpu_name"] == FINGERPRINT["gpu_name"]
    # the model as it is (no refit): its own selection cost on the rows featurised with `device`
    X = featurize_frame(shapes.rows, device)
    assert np.array_equal(costs["cost_model"], per_shape_selection_cost(model, shapes.sid, X))
    # verify's lookup slot is the model's own table, as the selector reads it
    assert np.array_equal(costs["nearest_templates"], preference_cost(model_nearest_table(model), shapes))
    real = result["headroom_capture"]["family"]["realistic"]
    assert set(real["aten_plus_k"]) == {"cost_model", "nearest_shape"}
    sel = selection_picks(shapes, costs["cost_model"], costs["nearest_templates"])
    mask = ~shape_table(shapes)["decision_free"]
    for metric in ("verify", "predict"):
        want = capture_stats(shapes.aten_time[mask], shapes.best[mask], sel[metric][mask])["capture"]
        assert real[metric] == pytest.approx(want)
    want4 = capture_stats(shapes.aten_time[mask], shapes.best[mask], sel["aten+4"][mask])["capture"]
    assert real["aten_plus_k"]["cost_model"][4] == pytest.approx(want4)


def test_score_as_is_featurises_another_card_differently(trained, cards):
    """The two cards' fingerprints give the model other inputs for the same rows."""
    _, _, model, _ = trained
    _, (b, fb) = cards
    shapes = ShapeSet.from_frame(b)
    on_b, on_a = featurize_frame(shapes.rows, fb), featurize_frame(shapes.rows, FINGERPRINT)
    assert not np.array_equal(on_b[:, _COL["log10_t_memory_ms"]], on_a[:, _COL["log10_t_memory_ms"]])
    with pytest.raises(EvaluationError, match="device_features"):
        score_as_is(b, fb, model, device_features="card")


def test_cli_evaluate_as_is_on_another_cards_data_and_train_pooled(trained, cards, tmp_path, capsys):
    data_a, data_b, _, model_path = trained
    capsys.readouterr()
    argv = ["evaluate", "--as-is", "--data", str(data_b), "--model", str(model_path), "--folds", "3"]
    assert cli_main([*argv, "--json", "--scheme", "family"]) == 0  # no --force: another card is the point
    result = json.loads(capsys.readouterr().out)
    assert result["as_is"] and not result["model_trained_on_this_data"]
    assert result["featurised_with"]["fingerprint_id"] == OTHER["fingerprint_id"]
    assert "family" in result["headroom_capture"]
    assert cli_main(argv) == 0
    text = capsys.readouterr().out
    assert "scored on" in text and OTHER["gpu_name"] in text and "as is, nearest shape family held out" in text
    # on its own training data: said to be in-sample
    assert cli_main(["evaluate", "--as-is", "--data", str(data_a), "--model", str(model_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_trained_on_this_data"]
    # one model on both cards' data: the sidecar records both cards and datasets
    out = tmp_path / "pooled"
    argv = ["--quiet", "train", "--data", str(data_a), "--data", str(data_b), "--out", str(out)]
    assert cli_main([*argv, "--objective", "reg:aten", "--cv-folds", "0", "--grid", "single", "--nthread", "1"]) == 0
    meta = json.loads((tmp_path / "pooled.meta.json").read_text())
    assert [f["fingerprint_id"] for f in meta["fingerprints"]] == [
        FINGERPRINT["fingerprint_id"],
        OTHER["fingerprint_id"],
    ]
    assert [d["dataset"] for d in meta["datasets"]] == [str(data_a), str(data_b)]
    assert meta["fingerprint"]["fingerprint_id"] == FINGERPRINT["fingerprint_id"]
    assert set(meta["training"]["cards"].values()) == {FINGERPRINT["gpu_name"], OTHER["gpu_name"]}
    assert meta["training"]["shapes"] == 2 * ShapeSet.from_frame(cards[0][0]).n_shapes
    card = (tmp_path / "pooled.md").read_text()
    assert FINGERPRINT["gpu_name"] in card and OTHER["gpu_name"] in card
    capsys.readouterr()
    # scored on one of the cards it learnt from: in-sample
    assert cli_main(["evaluate", "--as-is", "--data", str(data_b), "--model", f"{out}.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_trained_on_this_data"]
    assert cli_main(["train", "--data", str(data_a), "--data", str(data_a), "--out", str(tmp_path / "x")]) == 2
    assert "same card" in capsys.readouterr().err


def test_bootstrap_reads_equal_selections_as_noise_and_a_worse_one_as_worse():
    aten = np.ones(6)
    best = np.array([0.5, 0.8, 0.9, 1.0, 0.7, 0.6])
    worse = np.minimum(best * 1.25, aten)  # never better than `best`, strictly worse where there is room
    out = bootstrap_captures(aten, best, {"own": best, "same": best.copy(), "worse": worse}, reference="own")
    assert out["captures"]["own"]["capture"] == pytest.approx(1.0)
    assert out["differences"]["same"]["interval"] == [0.0, 0.0] and out["differences"]["same"]["within_noise"]
    w = out["differences"]["worse"]
    room = np.log(aten / best)
    assert w["difference"] == pytest.approx(np.log(aten / worse).sum() / room.sum() - 1)
    assert w["interval"][1] < 0 and not w["within_noise"] and w["share_of_resamples_worse"] == 1.0
    # one row per seed: the capture is the mean of the seeds' captures
    seeds = np.stack([best, worse])
    two = bootstrap_captures(aten, best, {"own": best, "seeds": seeds}, reference="own")
    assert two["captures"]["seeds"]["capture"] == pytest.approx((1 + out["captures"]["worse"]["capture"]) / 2)
    # seeds that disagree (the best everywhere, or ATen everywhere): the interval spans drawing either
    flip = bootstrap_captures(aten, best, {"own": best, "seeds": np.stack([best, aten])}, reference="own")
    assert flip["captures"]["seeds"]["capture"] == pytest.approx(0.5)
    assert flip["captures"]["seeds"]["interval"] == pytest.approx([0.0, 1.0])
    worse_by_half = flip["differences"]["seeds"]
    assert worse_by_half["difference"] == pytest.approx(-0.5)
    assert worse_by_half["interval"] == pytest.approx([-1.0, 0.0]) and worse_by_half["within_noise"]
    groups = np.array(["x", "x", "x", "y", "y", "y"])
    per = group_captures(aten, best, {"worse": worse}, groups)["worse"]
    for g in ("x", "y"):
        m = groups == g
        assert per[g] == pytest.approx(np.log(aten[m] / worse[m]).sum() / room[m].sum())
    with pytest.raises(ValueError, match="no headroom"):
        bootstrap_captures(aten, aten, {"own": aten})
    with pytest.raises(ValueError, match="reference"):
        bootstrap_captures(aten, best, {"own": best}, reference="nobody")


def test_two_datasets_of_one_card_join_as_its_rows_and_a_model_may_decide_some_dtypes(cards, tmp_path, capsys):
    """Catches: a second dataset of one card refused (bf16 and other dtypes are collected apart),
    joined with another card's device columns, or a problem measured in both counted twice;
    `train --dtypes` naming a dtype the data lacks, or not written to the sidecar and card; the
    same for `--predict-dtypes` and a dtype the model does not decide."""
    (a, fa), _ = cards
    b = a.assign(dtype="fp16", problem_key=a["problem_key"].str.replace(":bf16:", ":fp16:"))
    fb = {**fa, "peak_tflops": {**fa["peak_tflops"], "tf32": 494.7}}  # a later collection records TF32
    rows, devices = pool([(a, fa), (b, fb)])
    assert list(devices.fingerprints) == [fa["fingerprint_id"]] and devices.sources == (fa["fingerprint_id"],) * 2
    assert devices.fingerprints[fa["fingerprint_id"]]["peak_tflops"]["tf32"] == 494.7
    assert ShapeSet.from_frame(rows).n_shapes == 2 * ShapeSet.from_frame(a).n_shapes
    with pytest.raises(PoolingError, match="same card.*holds"):
        pool([(a, fa), (a, fb)])
    with pytest.raises(PoolingError, match="mem_bandwidth_gbs"):
        pool([(a, fa), (b, {**fb, "mem_bandwidth_gbs": 1000.0})])
    data_a, data_b = write_dataset(tmp_path / "a", a, fa), write_dataset(tmp_path / "b", b, fb)
    argv = ["--quiet", "train", "--data", str(data_a), "--data", str(data_b), "--out", str(tmp_path / "m")]
    argv += ["--objective", "reg:aten", "--cv-folds", "0", "--grid", "single", "--nthread", "1"]
    assert cli_main([*argv, "--dtypes", "fp16,tf32"]) == 2
    assert "tf32" in capsys.readouterr().err
    assert cli_main([*argv, "--dtypes", "fp16", "--predict-dtypes", "bf16"]) == 2  # not one it decides
    assert "--predict-dtypes 'bf16'" in capsys.readouterr().err
    assert cli_main([*argv, "--dtypes", "fp16", "--predict-dtypes", ""]) == 0
    meta = json.loads((tmp_path / "m.meta.json").read_text())
    assert meta["training"]["dtypes"] == ["fp16"] and meta["training"]["data_dtypes"] == ["bf16", "fp16"]
    assert meta["training"]["predict_dtypes"] == []  # predict keeps cuBLAS for every dtype it decides
    assert "| predict takes templates for | none (the others: cuBLAS) |" in (tmp_path / "m.md").read_text()
    assert [d["fingerprint_id"] for d in meta["datasets"]] == [fa["fingerprint_id"]] * 2
    assert "| dtypes it decides | fp16 (its data: bf16, fp16) |" in (tmp_path / "m.md").read_text()
