"""AMD backend-winner model: exact metrics on a toy table, the real tables, I/O and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kselect.training.amd.classifier import SCHEMA_VERSION, BackendWinnerClassifier, train
from kselect.training.amd.evaluation import evaluate_in_sample, leave_one_table_out, select_config, table_folds
from kselect.training.amd.features import features
from kselect.training.amd.label_noise import near_tie_sets, series_neighbour_agreement
from kselect.training.amd.metrics import metrics
from kselect.training.amd.recipe import Recipe
from kselect.training.amd.tables import (
    INPUT_COLUMNS,
    OUTCOME_COLUMNS,
    TableError,
    file_sha256,
    load_tables,
    table_files,
)
from kselect.training.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SHARED_TABLES = REPO / ".." / "shared" / "external" / "aiter-bf16-tuned"
SHIPPED_MODEL = REPO / "models" / "amd-backend-winner.json"

HEADER = (
    "gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,err_ratio,tflops,bw"
)


def _row(m, n, k, lib, us, gfx="gfx950", cu=256):
    return f"{gfx},{cu},{m},{n},{k},False,torch.bfloat16,torch.bfloat16,False,False,{lib},0,0,{us},kern,0.0,1.0,1.0"


def _write(path: Path, rows) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


@pytest.fixture
def toy_dir(tmp_path) -> Path:
    """Two tables whose leave-one-table-out baseline answers are worked out by hand below."""
    d = tmp_path / "tables"
    d.mkdir()
    _write(
        d / "a.csv",
        [
            _row(1, 1024, 1024, "skinny", 5.0),
            _row(2, 1024, 1024, "skinny", 5.1),
            _row(4096, 1024, 1024, "asm", 50.0),
            _row(8192, 1024, 1024, "asm", 90.0),
        ],
    )
    # asm at M=8192 (61us) bounds asm at M=4096 to <= 61us: within 5% of torch's 60us.
    _write(
        d / "b.csv",
        [
            _row(1, 2048, 2048, "skinny", 6.0),
            _row(8192, 2048, 2048, "asm", 61.0),
            _row(4, 2048, 2048, "skinny", 6.2),
            _row(4096, 2048, 2048, "torch", 60.0),
        ],
    )
    return d


# --------------------------------------------------------------------------- exact metrics


def test_metrics_by_hand():
    y = ["a", "b", "c", "a"]
    ranking = np.array([["a", "b", "c"], ["a", "b", "c"], ["b", "a", "c"], ["c", "b", "a"]])
    m = metrics(y, ranking, labels=["a", "b", "c"], acceptable=lambda i, p: i == 3)
    assert m["n"] == 4
    assert m["accuracy"] == 0.25  # only row 0
    assert m["top2"] == 0.5  # rows 0 and 1
    assert m["within_tolerance"] == 0.5  # row 0 (exact) + row 3 (declared tie)
    assert m["confusion"] == [[1, 0, 1], [1, 0, 0], [0, 1, 0]]
    assert m["per_class"]["a"] == {"precision": 0.5, "recall": 0.5, "support": 2, "predicted": 2}
    assert m["per_class"]["b"]["precision"] == 0.0 and m["per_class"]["b"]["recall"] == 0.0
    assert m["per_class"]["c"]["recall"] == 0.0


def test_near_tie_sets_use_larger_m_bound(toy_dir):
    frame = load_tables(toy_dir)
    classes = ["asm", "skinny", "torch"]
    ok = near_tie_sets(frame, classes, 0.05)
    torch_row = int(np.flatnonzero((frame["libtype"] == "torch").to_numpy())[0])
    assert ok[torch_row].tolist() == [True, False, True]  # asm 61us <= 1.05 * 60us
    strict = near_tie_sets(frame, classes, 0.0)
    assert strict[torch_row].tolist() == [False, False, True]
    assert strict.sum() == len(frame)  # no ties at 0%: only winners


def test_leave_one_table_out_baselines_exact(toy_dir):
    frame = load_tables(toy_dir)
    ev = leave_one_table_out(frame, Recipe(None, False), {"n_estimators": 5, "min_child_weight": 0.01}, tolerance=0.05)
    maj, near = ev.baselines["majority"], ev.baselines["nearest_shape"]
    # majority: held-out a -> skinny everywhere (2/4); held-out b -> asm/skinny tie -> asm (1/4)
    assert maj["n"] == 8 and maj["accuracy"] == 3 / 8
    assert maj["top2"] == 7 / 8  # only b's torch row missed
    assert maj["within_tolerance"] == 4 / 8  # b's torch row: asm is a 5% tie
    # nearest shape in (log M, log N, log K): misses a's M=4096 (torch) and b's torch row
    assert near["accuracy"] == 6 / 8 and near["top2"] == 7 / 8
    assert near["within_tolerance"] == 7 / 8
    assert near["labels"] == ["asm", "skinny", "torch"]
    assert near["confusion"] == [[2, 0, 1], [0, 4, 0], [1, 0, 0]]
    assert near["per_class"]["asm"]["precision"] == 2 / 3
    assert near["per_class"]["torch"]["recall"] == 0.0
    assert [t["table"] for t in ev.per_table] == ["a.csv", "b.csv"]
    assert [t["majority"]["accuracy"] for t in ev.per_table] == [0.5, 0.25]
    assert sum(sum(r) for r in ev.model["confusion"]) == 8


def test_model_separable_toy_in_sample(tmp_path):
    rows = []
    for n in (512, 1024, 2048, 4096):
        rows += [_row(m, n, 4096, "skinny", 5.0 + m) for m in (1, 2, 4, 8)]
        rows += [_row(m, n, 4096, "asm", 100.0 + m) for m in (2048, 4096, 8192, 16384)]
    _write(tmp_path / "t.csv", rows)
    frame = load_tables(tmp_path)
    model = train(frame, Recipe(None, False), n_estimators=20, learning_rate=0.3)
    ev = evaluate_in_sample(model, frame)
    assert ev.model["accuracy"] == 1.0 and ev.model["top2"] == 1.0
    assert ev.model["confusion"] == [[16, 0], [0, 16]]
    assert ev.baselines["majority"]["accuracy"] == 0.5


# --------------------------------------------------------------------------- features / io


def test_features_ignore_outcome_columns(toy_dir):
    frame = load_tables(toy_dir)
    scrambled = frame.copy()
    scrambled["libtype"] = "torch"
    scrambled["us"] = 1.0
    scrambled["kernelName"] = "x"
    pd.testing.assert_frame_equal(features(frame), features(scrambled))
    only_inputs = frame.loc[:, list(INPUT_COLUMNS)]
    pd.testing.assert_frame_equal(features(frame), features(only_inputs))
    assert not set(OUTCOME_COLUMNS) & set(features(frame).columns)


def test_save_load_round_trip(toy_dir, tmp_path):
    frame = load_tables(toy_dir)
    model = train(frame, Recipe(), n_estimators=10, min_child_weight=0.01)
    model_path, meta_path = model.save(tmp_path / "m", {"note": "toy"})
    assert model_path.name == "m.json" and meta_path.name == "m.meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["classes"] == ["asm", "skinny", "torch"]
    assert meta["feature_names"] == list(features(frame).columns)
    json.loads(model_path.read_text())  # XGBoost JSON, not a pickle
    loaded = BackendWinnerClassifier.load(model_path)
    assert np.array_equal(model.predict_proba(frame), loaded.predict_proba(frame))
    assert list(model.predict(frame)) == list(loaded.predict(frame))
    assert loaded.get_params() == model.get_params()


def test_load_missing_or_bad_model(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        BackendWinnerClassifier.load(tmp_path / "nope.json")
    (tmp_path / "m.json").write_text("{}")
    (tmp_path / "m.meta.json").write_text("not json")
    with pytest.raises(ValueError, match="m.meta.json"):
        BackendWinnerClassifier.load(tmp_path / "m.json")


def test_missing_column_names_file_and_column(tmp_path):
    (tmp_path / "bad.csv").write_text("gfx,cu_num,M,N,K,libtype,us\ngfx950,256,1,2,3,asm,1.0\n")
    with pytest.raises(TableError, match=r"bad\.csv.*missing column.*bias"):
        load_tables(tmp_path)


def test_empty_dir_and_garbled_table(tmp_path):
    with pytest.raises(ValueError, match="no tuned-GEMM tables"):
        load_tables(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        load_tables(tmp_path / "absent")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(TableError, match="empty.csv"):
        load_tables(tmp_path)
    (tmp_path / "empty.csv").unlink()
    _write(tmp_path / "garbled.csv", [_row("x", 1024, 1024, "asm", 1.0)])
    with pytest.raises(TableError, match=r"garbled\.csv.*'M'"):
        load_tables(tmp_path)


def test_untimed_rows_are_dropped(tmp_path):
    _write(tmp_path / "t.csv", [_row(1, 64, 64, "triton", 0), _row(2, 64, 64, "asm", 3.0)])
    assert len(load_tables(tmp_path)) == 1
    assert len(load_tables(tmp_path, measured_only=False)) == 2


# --------------------------------------------------------------------------- CLI


def test_cli_train_and_evaluate_json(toy_dir, tmp_path, capsys):
    stem = tmp_path / "model" / "toy"
    assert main(["amd", "train", "--tables", str(toy_dir), "--out", str(stem), "--n-estimators", "5"]) == 0
    capsys.readouterr()
    assert main(["amd", "evaluate", "--tables", str(toy_dir), "--model", f"{stem}.json", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)  # exactly one JSON object
    for key in ("accuracy", "top2", "n", "baselines", "scope", "leave_one_table_out"):
        assert key in report
    assert report["n"] == 8
    assert set(report["baselines"]) == {"majority", "nearest_shape"}
    loto = report["leave_one_table_out"]
    assert loto["baselines"] == {"majority": 3 / 8, "nearest_shape": 6 / 8}
    assert len(loto["per_table"]) == 2


def test_cli_bad_input_is_a_clean_error(tmp_path, capsys):
    rc = main(["amd", "evaluate", "--tables", str(tmp_path), "--model", str(tmp_path / "missing.json"), "--json"])
    assert rc == 2
    assert "kselect: error:" in capsys.readouterr().err


# --------------------------------------------------------------------------- real tables

needs_shared = pytest.mark.skipif(not SHARED_TABLES.is_dir(), reason=f"shared AMD tables absent at {SHARED_TABLES}")


@needs_shared
def test_real_tables_leave_one_table_out_beats_majority():
    frame = load_tables(SHARED_TABLES)
    tables = table_files(SHARED_TABLES)
    ev = leave_one_table_out(frame, Recipe(), {"n_estimators": 25, "learning_rate": 0.3})
    assert ev.model["n"] == len(frame)
    assert len(ev.per_table) == len(tables)
    assert sum(sum(r) for r in ev.model["confusion"]) == len(frame)
    assert ev.model["accuracy"] > ev.baselines["majority"]["accuracy"] + 0.1
    assert ev.model["top2"] >= ev.model["accuracy"]
    assert ev.model["within_tolerance"] >= ev.model["accuracy"]


@needs_shared
@pytest.mark.skipif(not SHIPPED_MODEL.is_file(), reason="shipped model not built yet")
def test_shipped_model_evaluates_via_cli(capsys):
    assert main(["amd", "evaluate", "--tables", str(SHARED_TABLES), "--model", str(SHIPPED_MODEL), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    meta = json.loads(SHIPPED_MODEL.with_name("amd-backend-winner.meta.json").read_text())
    assert report["n"] == meta["training_rows"]
    assert report["accuracy"] > report["baselines"]["majority"]
    assert {t["name"] for t in meta["tables"]} == set(report["tables"])
    assert all(t["sha256"] == file_sha256(SHARED_TABLES / t["name"]) for t in meta["tables"])
    held = report["leave_one_table_out"]
    assert held["n"] == report["n"] and len(held["per_table"]) == len(meta["tables"])
    assert held["accuracy"] > max(held["baselines"].values())  # beats both baselines
    assert held["top2"] > held["accuracy"]


# --------------------------------------------------------------------------- label smoothness


def test_series_neighbour_agreement_by_hand(tmp_path):
    # one series, M = 1, 2, 4, 8, 16: A A B A A -> the B row is an isolated flip
    _write(
        tmp_path / "s.csv",
        [
            _row(1, 64, 64, "asm", 1.0),
            _row(2, 64, 64, "asm", 1.0),
            _row(4, 64, 64, "torch", 1.0),
            _row(8, 64, 64, "asm", 1.0),
            _row(16, 64, 64, "asm", 1.0),
            _row(1, 128, 64, "asm", 1.0),
        ],
    )  # alone in its series
    nb = series_neighbour_agreement(load_tables(tmp_path))
    assert nb["rows"] == 5  # the lone row has no neighbour
    # nearest (smaller M on a tie in log2 M): M=1->2 A ok, M=2->1 A ok, M=4->2 A miss,
    # M=8->4 B miss, M=16->8 A ok
    assert nb["nearest"] == 3 / 5
    assert nb["either"] == 4 / 5  # only the flip itself has no equal neighbour
    assert nb["isolated"] == 1 / 5
    assert nb["per_arch"]["gfx950"]["rows"] == 5


def test_series_neighbours_do_not_cross_tables(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    _write(d / "a.csv", [_row(1, 64, 64, "asm", 1.0), _row(2, 64, 64, "asm", 1.0)])
    _write(d / "b.csv", [_row(4, 64, 64, "torch", 1.0), _row(8, 64, 64, "torch", 1.0)])
    nb = series_neighbour_agreement(load_tables(d))
    assert nb["rows"] == 4 and nb["nearest"] == 1.0  # a's M=2 never sees b's M=4


# --------------------------------------------------------------------------- nested selection


def _four_tables(tmp_path) -> Path:
    d = tmp_path / "four"
    d.mkdir()
    for i, name in enumerate("abcd"):
        n = 512 * (i + 1)
        _write(
            d / f"{name}.csv",
            [_row(m, n, 2048, "skinny", 5.0 + m) for m in (1, 2, 4, 8)]
            + [_row(m, n, 2048, "asm", 90.0 + m) for m in (4096, 8192, 16384)]
            + ([_row(32, n, 2048, "torch", 20.0)] if i % 2 else []),
        )
    return d


def test_table_folds_keep_tables_whole(tmp_path):
    frame = load_tables(_four_tables(tmp_path))
    fold = table_folds(frame, 3)
    for table in frame["table"].unique():
        assert len(set(fold[(frame["table"] == table).to_numpy()])) == 1
    # sizes b, d (8 rows) then a, c (7): dealt round-robin in that order
    assert [int(fold[(frame["table"] == f"{t}.csv").to_numpy()][0]) for t in "bdac"] == [0, 1, 2, 0]
    assert np.array_equal(fold, table_folds(frame.sample(frac=1, random_state=1).sort_index(), 3))


def test_nested_selection_never_reads_the_held_out_table(tmp_path):
    frame = load_tables(_four_tables(tmp_path))
    grid = (
        (Recipe(None, False), {"n_estimators": 2, "min_child_weight": 0.01}),
        (Recipe(None, False), {"n_estimators": 20, "min_child_weight": 0.01}),
    )
    ev = leave_one_table_out(frame, candidates=grid, inner_folds=3)
    chosen = {t["table"]: t["chosen"] for t in ev.per_table}
    assert set(chosen) == {"a.csv", "b.csv", "c.csv", "d.csv"}
    for c in chosen.values():
        assert c["candidate"] in (0, 1) and len(c["inner_accuracy"]) == 2
        assert c["params"] == grid[c["candidate"]][1]
    # scramble the held-out table's labels: its own fold's choice must not move
    scrambled = frame.copy()
    held = (scrambled["table"] == "a.csv").to_numpy()
    scrambled.loc[held, "libtype"] = "torch"
    ev2 = leave_one_table_out(scrambled, candidates=grid, inner_folds=3)
    assert {t["table"]: t["chosen"] for t in ev2.per_table}["a.csv"] == chosen["a.csv"]
    # and select_config on the other three tables alone reproduces that choice
    best, inner = select_config(frame[~held], grid, 3)
    assert best == chosen["a.csv"]["candidate"] and inner == chosen["a.csv"]["inner_accuracy"]


def test_cli_evaluate_nested_and_label_noise(tmp_path, capsys):
    d = _four_tables(tmp_path)
    stem = tmp_path / "m"
    assert main(["amd", "train", "--tables", str(d), "--out", str(stem), "--n-estimators", "5"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "amd",
                "evaluate",
                "--tables",
                str(d),
                "--model",
                f"{stem}.json",
                "--json",
                "--nested",
                "--inner-folds",
                "2",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    nested = report["leave_one_table_out_nested"]
    assert nested["n"] == report["n"] == 30
    assert all("chosen" in t for t in nested["per_table"])
    assert "chosen" not in report["leave_one_table_out"]["per_table"][0]
    assert report["label_noise"]["series_neighbours"]["rows"] == 30
    assert (
        main(["amd", "evaluate", "--tables", str(d), "--model", f"{stem}.json", "--nested", "--inner-folds", "1"]) == 2
    )
    assert "--inner-folds" in capsys.readouterr().err
