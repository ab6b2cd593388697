"""Metrics exactly right on a toy case; train + evaluate end to end on a small slice."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kselect.training.cli.main import main as cli_main
from kselect.training.data.dataset import COLUMNS, conform, load_dataset
from kselect.training.data.synthetic import FINGERPRINT, synthetic_dataset
from kselect.training.learn.ranking_metrics import ShapeSet, default_metrics, evaluate_costs, folds

REAL = Path(__file__).resolve().parents[2] / "data" / "h200-bf16"


def row(pk, fam, oracle, ck, backend, template, t, **knobs):
    r = {c: None for c in COLUMNS}
    r.update(
        {
            "problem_key": pk,
            "op": "mm",
            "M": 64,
            "N": 64,
            "K": 64,
            "batch": 1,
            "dtype": "bf16",
            "layout": "nt",
            "model": fam,
            "candidate_key": ck,
            "backend": backend,
            "template": template,
            "status": "ok" if t is not None else "compile_error",
            "time_ms": t,
            "oracle": oracle,
            **knobs,
        }
    )
    return r


def toy():
    """Shape a (oracle): best t1 0.5, t2 within 2%; our order t4(failed), t3, t2, t1, aten.
    Shape b: best u1 (decompose_k) 0.8, u2 0.81 within 2%; our order u2, u1, aten."""
    tile = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_stages": 3, "num_warps": 4, "GROUP_M": 8}
    rows = [
        row("a", "f1", True, "aten:mm", "aten", "mm", 1.0),
        row("a", "f1", True, "t1", "triton", "mm", 0.5, **tile),
        row("a", "f1", True, "t2", "triton", "mm", 0.505, **tile),
        row("a", "f1", True, "t3", "triton", "persistent_tma", 2.0, **tile),
        row("a", "f1", True, "t4", "triton", "mm", None, **tile),
        row("b", "f2", False, "aten:mm", "aten", "mm", 1.0),
        row("b", "f2", False, "u1", "triton", "decompose_k", 0.8, k_split=2),
        row("b", "f2", False, "u2", "triton", "mm", 0.81, **tile),
    ]
    shapes = ShapeSet.from_frame(
        conform(pd.DataFrame(rows)), default_keys=lambda r: {"t3"} if r["problem_key"] == "a" else {"u2"}
    )
    cost_by_key = {
        ("a", "t4"): 0,
        ("a", "t3"): 1,
        ("a", "t2"): 2,
        ("a", "t1"): 3,
        ("a", "aten:mm"): 4,
        ("b", "u2"): 0,
        ("b", "u1"): 1,
        ("b", "aten:mm"): 2,
    }
    cost = np.array(
        [cost_by_key[(p, c)] for p, c in zip(shapes.rows["problem_key"], shapes.rows["candidate_key"])], dtype=float
    )
    return shapes, cost


def test_toy_metrics_exact():
    shapes, cost = toy()
    res = evaluate_costs(shapes, cost, ks=(1, 2, 4))
    a = res["all"]
    assert a["shapes"] == 2 and a["oracle_shapes"] == 1
    # k=1: a's pick failed -> ATen fallback 1.0 (50%); b picks u2 0.81 (0.8/0.81)
    assert a["pct_oracle_geomean"][1] == pytest.approx(math.sqrt(0.5 * 0.8 / 0.81))
    assert a["all_failed"] == {1: 1, 2: 0, 4: 0}
    assert a["pct_oracle_geomean"][2] == pytest.approx(math.sqrt(0.25 * 1.0))
    assert a["pct_oracle_geomean"][4] == pytest.approx(1.0)
    assert a["top1"] == pytest.approx(0.5)  # b's 0.81 is within 2% of 0.8
    assert a["recall"] == {1: 0.5, 2: 0.5, 4: 1.0}
    assert a["regret_max"][1] == pytest.approx(1.0)
    assert a["regret_p50"][1] == pytest.approx((1.0 + 0.0125) / 2)
    assert a["default_beats_ours"] == {1: 0.0, 2: 0.5, 4: 0.0}
    conf = a["template_confusion"]
    assert conf["mm"]["mm"] == 1 and conf["decompose_k"]["mm"] == 1
    assert sum(sum(r.values()) for r in conf.values()) == 2
    o = res["oracle"]
    assert o["shapes"] == 1 and o["pct_oracle_geomean"][1] == pytest.approx(0.5)
    d = default_metrics(shapes)["all"]
    assert d["pct_oracle_geomean"] == pytest.approx(math.sqrt(0.5 * 0.8 / 0.81))
    assert d["candidates_median"] == 2 and d["top1"] == pytest.approx(0.5)


def test_folds_never_leak_a_shape():
    shapes = ShapeSet.from_frame(synthetic_dataset(n_shapes=10, n_oracle=1, sample=10))
    for scheme in ("shape", "family", "family-kfold"):
        masks = [m for _, m in folds(shapes, scheme, 3)]
        assert (np.sum(masks, axis=0) == 1).all()
    fam = [m for _, m in folds(shapes, "family", 3)]
    assert all(len(set(shapes.family[m])) == 1 for m in fam)


def small_slice(tmp_path) -> Path:
    """Up to 4 shapes from each of 3 families of the committed data, else a synthetic set."""
    out = tmp_path / "slice"
    out.mkdir()
    if (REAL / "measurements.parquet").exists():
        df = load_dataset(REAL)
        first = df.drop_duplicates("problem_key")
        fams = first["model"].value_counts().index[:3]
        chosen = first[first["model"].isin(fams)].groupby("model").head(4)["problem_key"]
        df = df[df["problem_key"].isin(chosen)]
        df = df.sort_values("time_ms").groupby("problem_key").head(150)  # keep the slice small
        fp = json.loads((REAL / "fingerprint.json").read_text())
    else:
        df, fp = synthetic_dataset(n_shapes=12, n_oracle=3, sample=60), FINGERPRINT
    conform(df).to_parquet(out / "measurements.parquet", index=False)
    (out / "fingerprint.json").write_text(json.dumps(fp))
    return out


def _train(data: Path, model: Path, *options: str) -> None:
    """`kselect train` of `data` into `model` (.json and sidecars), one thread; it must succeed."""
    assert cli_main(["train", "--data", str(data), "--out", str(model), *options, "--nthread", "1"]) == 0


def _evaluate_argv(data: Path, model: Path, *options: str) -> list[str]:
    """`kselect evaluate` of the model trained into `model` on `data`."""
    return ["evaluate", "--data", str(data), "--model", f"{model}.json", *options]


def _report_with_card(data: Path, model: Path, report: Path) -> None:
    """`kselect report` over two folds into `report`, updating the model's card; it must succeed."""
    argv = ["report", "--data", str(data), "--model", f"{model}.json", "--out", str(report), "--folds", "2"]
    assert cli_main([*argv, "--update-card"]) == 0


def test_train_evaluate_report_end_to_end(tmp_path, capsys):
    data = small_slice(tmp_path)
    model = tmp_path / "models" / "tiny"
    _train(data, model, "--objective", "rank:pairwise", "--cv-folds", "0")
    capsys.readouterr()
    assert cli_main(_evaluate_argv(data, model, "--json", "--scheme", "family", "--folds", "3")) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    # off a terminal: the progress lines, no bar
    assert "family: cost_model ..." in captured.err and "held-out fits" not in captured.err
    for key in ("pct_oracle_geomean", "top1", "regret_p99", "shapes"):
        assert key in result
    g = {int(k): v for k, v in result["pct_oracle_geomean"].items()}
    assert set(g) == {1, 2, 4, 8, 16}
    assert all(0 < g[k] <= 1 for k in g) and g[1] <= g[16] + 1e-12
    assert set(result["schemes"]["family"]) >= {"cost_model", "roofline", "random_forest", "nearest_shape", "default"}
    report = tmp_path / "report"
    _report_with_card(data, model, report)
    for name in (
        "report.md",
        "evaluation.json",
        "pct_of_oracle_vs_k.png",
        "regret_cdf.png",
        "predicted_vs_measured.png",
    ):
        assert (report / name).stat().st_size > 0
    assert "Held-out metrics" in (tmp_path / "models" / "tiny.md").read_text()


def test_headroom_recipe_end_to_end(tmp_path, capsys):
    """A reg:aten model: evaluate reports the policies' capture; report writes the headroom
    plot and table; the card states the capture."""
    data = small_slice(tmp_path)
    model = tmp_path / "models" / "gap"
    _train(data, model, "--objective", "reg:aten", "--grid", "headroom")
    capsys.readouterr()
    # the sidecar carries verify's nearest-shape table, and it reads back
    from kselect.selector.decide.nearest import from_metadata

    table = from_metadata(json.loads((tmp_path / "models" / "gap.meta.json").read_text()))
    assert table is not None and len(table) > 0 and all(k.startswith("triton:") for k in table.keys)
    assert cli_main(_evaluate_argv(data, model, "--json", "--scheme", "family", "--folds", "3", "--no-baselines")) == 0
    hc = json.loads(capsys.readouterr().out)["headroom_capture"]["family"]
    real = hc["realistic"]
    assert (
        real["shapes"] + hc["decision_free"]["shapes"]
        == hc["detail"]["shapes"]["realistic"]["shapes"] + hc["detail"]["shapes"]["decision_free"]["shapes"]
    )
    if real["headroom_log_sum"] > 0:
        assert isinstance(real["verify"], float) and isinstance(real["predict"], float)
        assert real["verify"] <= 1 + 1e-9
        # verify times ATen: never slower than it
        assert hc["detail"]["policies"]["verify"]["realistic"]["worst_pick_over_aten"] <= 1.0 + 1e-12
    assert cli_main(_evaluate_argv(data, model, "--scheme", "family", "--folds", "3", "--no-baselines")) == 0
    text = capsys.readouterr().out
    assert f"headroom capture (family held out, {real['shapes']} realistic shapes)" in text
    report = tmp_path / "report"
    _report_with_card(data, model, report)
    assert (report / "capture_vs_k.png").stat().st_size > 0
    assert "largest headroom" in (report / "headroom.md").read_text()
    assert "Headroom capture" in (tmp_path / "models" / "gap.md").read_text()


def test_train_reach_beside_a_headroom_model(tmp_path, capsys):
    """`kselect train-reach`: verify's budget model beside a reg:aten model loads with it; bad
    flags and a model of another objective are errors before any training; retraining the cost
    model makes the reach model a broken one (refused at load)."""
    from kselect.selector.model.artifact import ModelError
    from kselect.selector.model.cost_model import CostModel
    from kselect.selector.model.reach import ReachModel

    data = small_slice(tmp_path)
    model = tmp_path / "models" / "gap"
    _train(data, model, "--objective", "reg:aten", "--grid", "headroom", "--cv-folds", "0")
    reach = ["train-reach", "--model", str(model), "--data", str(data)]
    assert cli_main([*reach, "--tiers", "0.4:4,0.6:1"]) == 0
    got = ReachModel.beside(CostModel.load(f"{model}.json"))
    assert got is not None and got.tiers == ((0.4, 4), (0.6, 1)) and got.aten_gap_max == 0.7
    meta = got.model.metadata_
    assert meta["kind"] == "reach-model" and meta["beside"]["file"] == "gap.json" and "train-reach" in meta["command"]
    capsys.readouterr()
    assert cli_main([*reach, "--tiers", "0.4"]) == 2 and "BOUND:TEMPLATES" in capsys.readouterr().err
    assert cli_main([*reach, "--tiers", "0.6:4,0.4:1"]) == 2 and "ascending" in capsys.readouterr().err
    assert cli_main([*reach, "--gap-max", "0.2"]) == 2 and "above the cost model's clip" in capsys.readouterr().err
    ranking = tmp_path / "models" / "ranking"
    _train(data, ranking, "--objective", "rank:pairwise", "--cv-folds", "0")
    assert cli_main(["train-reach", "--model", str(ranking), "--data", str(data)]) == 2
    assert "'reg:aten' cost model" in capsys.readouterr().err
    fewer = tmp_path / "fewer"  # the cost model retrained on other data: other trees
    fewer.mkdir()
    rows = pd.read_parquet(data / "measurements.parquet")
    rows[rows.problem_key != rows.problem_key.iloc[0]].to_parquet(fewer / "measurements.parquet", index=False)
    (fewer / "fingerprint.json").write_text((data / "fingerprint.json").read_text())
    _train(fewer, model, "--objective", "reg:aten", "--grid", "headroom", "--cv-folds", "0")
    with pytest.raises(ModelError, match="train-reach"):
        ReachModel.beside(CostModel.load(f"{model}.json"))


def test_cli_bad_input_is_an_error_not_a_traceback(tmp_path, capsys):
    assert cli_main(["evaluate", "--data", str(tmp_path / "missing"), "--model", "x.json"]) == 2
    assert "error" in capsys.readouterr().err


def test_minus_inf_cost_means_benchmark_first():
    shapes, cost = toy()
    aten = (shapes.rows["candidate_key"] == "aten:mm").to_numpy()
    res = evaluate_costs(shapes, np.where(aten, -np.inf, cost), ks=(1, 2))["all"]
    # k=1 is ATen on both shapes (1.0 vs best 0.5 and 0.8); k=2 adds a's failed t4 and b's u2
    assert res["pct_oracle_geomean"][1] == pytest.approx(math.sqrt(0.5 * 0.8))
    assert res["pct_oracle_geomean"][2] == pytest.approx(math.sqrt(0.5 * 0.8 / 0.81))


def test_auto_objective_is_chosen_by_grouped_cv():
    from kselect.training.learn.train import AUTO_OBJECTIVES, train

    df = synthetic_dataset(n_shapes=8, n_oracle=1, sample=30)
    grid = ({"max_depth": 3, "learning_rate": 0.3, "n_estimators": 10, "min_child_weight": 1.0},)
    model, card = train(df, FINGERPRINT, objective="auto", cv_folds=2, grid=grid, nthread=1, log=lambda m: None)
    assert [r["objective"] for r in card["cv_table"]] == list(AUTO_OBJECTIVES)
    best = max(card["cv_table"], key=lambda r: r["score"])
    assert model.objective == best["objective"] and best["objective"] in card["objective_reason"]
    assert card["cv_scheme"] == "family-kfold"  # 4 families >= 2 folds: groups are families
    assert card["backends"] == sorted(set(df["backend"]))  # what the selector trusts scores for


def test_targets_on_oracle_shapes_are_checked_separately():
    from kselect.training.learn.held_out import check_targets

    def ranker(all_g, oracle_g):
        per = lambda g: {"pct_oracle_geomean": {1: g, 4: g}, "pct_oracle_p1": {1: g, 4: g}}  # noqa: E731
        return {"all": per(all_g), "oracle": per(oracle_g)}

    res = {
        "cost_model": ranker(0.995, 0.98),
        "roofline": ranker(0.90, 0.90),
        "default": {"all": {"pct_oracle_geomean": 0.99}, "oracle": {"pct_oracle_geomean": 0.985}},
    }
    assert check_targets(res)["pct_oracle_geomean_k4>=0.99"][1] is True
    assert check_targets(res)["beats_every_baseline_at_every_k"] == [[], True]
    strict = check_targets(res, "oracle")
    assert strict["pct_oracle_geomean_k4>=0.99"][1] is False
    assert strict["beats_every_baseline_at_every_k"] == [["default@k=1", "default@k=4"], False]


def _on_a_terminal(argv: list[str]) -> tuple[int, str]:
    """Run `kselect ARGV` with stderr on a pseudo-terminal 120 columns wide, as a user at a
    shell would; (exit status, what the terminal showed)."""
    import fcntl
    import os
    import struct
    import subprocess
    import sys
    import termios
    import threading

    main_fd, term_fd = os.openpty()
    fcntl.ioctl(term_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kselect.training.cli.main", *argv], stdout=subprocess.DEVNULL, stderr=term_fd
    )
    os.close(term_fd)
    shown: list[bytes] = []

    def read():  # drain the terminal while the command runs, so it never blocks on a full buffer
        while True:
            try:
                chunk = os.read(main_fd, 4096)
            except OSError:  # the command closed its end
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rc = proc.wait(timeout=300)
    reader.join(30)
    os.close(main_fd)
    return rc, b"".join(shown).decode(errors="replace")


@pytest.mark.slow
def test_evaluate_shows_its_folds_as_a_bar_with_an_eta_on_a_terminal(tmp_path):
    import re

    data = small_slice(tmp_path)
    model = tmp_path / "m"
    _train(data, model, "--objective", "rank:pairwise", "--cv-folds", "0")
    argv = _evaluate_argv(data, model, "--scheme", "family", "--folds", "2", "--no-baselines", "--json")
    rc, shown = _on_a_terminal(argv)
    assert rc == 0, shown
    # 3 families, one ranker: 3 held-out fits, each drawn with elapsed<remaining
    assert re.search(r"held-out fits: +\d+%\|.*\| [123]/3 \[\d\d:\d\d<\d\d:\d\d", shown), shown
    assert "family: cost_model ..." in shown
    rc, shown = _on_a_terminal(["--quiet", *argv])
    assert rc == 0 and "held-out fits" not in shown and "cost_model" not in shown, shown


def test_progress_counts_every_held_out_fit_and_cross_validation_fit():
    from kselect.selector.model.cost_model import CostModel
    from kselect.training.learn.held_out import run_evaluation
    from kselect.training.learn.train import DEFAULT_GRID, train

    df = synthetic_dataset(n_shapes=12, n_oracle=3, sample=40)
    heard: list[tuple] = []
    grid = [{**DEFAULT_GRID[0], "n_estimators": 30}, {**DEFAULT_GRID[0], "n_estimators": 40}]
    model, card = train(
        df,
        FINGERPRINT,
        objective="rank:pairwise",
        cv_folds=2,
        grid=grid,
        nthread=1,
        log=lambda m: None,
        progress=lambda *a: heard.append(a),
    )
    cv = [(d, t) for w, d, t in heard if w == "cross-validation fits"]
    assert cv == [(d, 4) for d in range(1, 5)]  # 2 settings x 2 folds, in order
    rounds = [(d, t) for w, d, t in heard if w.startswith("final fit")]
    assert rounds[-1] == (40, 40) or rounds[-1] == (30, 30)
    assert isinstance(model, CostModel) and len(card["cv_table"]) == 2
    heard.clear()
    run_evaluation(
        df, FINGERPRINT, model, ("shape",), 3, baselines=True, log=lambda m: None, progress=lambda *a: heard.append(a)
    )
    assert {w for w, _, _ in heard} == {"held-out fits"}
    total = heard[0][2]
    assert total == 3 * 4  # 3 folds x (ours + 3 baselines)
    assert [d for _, d, _ in heard] == list(range(1, total + 1))


def test_a_model_trained_on_several_dtypes_says_so_and_its_ranker_decides_them(tmp_path):
    """Catches: a model trained on bf16 and tf32 rows recorded as bf16-only (the selector would
    refuse its tf32 GEMMs), or a bf16-only card changed."""
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.training.learn.train import train

    df = synthetic_dataset(n_shapes=8, n_oracle=1, sample=30)
    grid = ({"max_depth": 3, "learning_rate": 0.3, "n_estimators": 5, "min_child_weight": 1.0},)
    kw = dict(objective="rank:pairwise", cv_folds=0, grid=grid, nthread=1, log=lambda m: None)
    _, bf16_card = train(df, FINGERPRINT, **kw)
    assert "dtypes" not in bf16_card
    keys = sorted(df["problem_key"].unique())[::2]
    mixed = df.copy()
    mixed.loc[mixed["problem_key"].isin(keys), "dtype"] = "tf32"
    mixed["problem_key"] = [k.replace(":bf16:", ":tf32:") if k in keys else k for k in mixed["problem_key"]]
    model, card = train(mixed, FINGERPRINT, **kw)
    assert card["dtypes"] == ["bf16", "tf32"]
    path = tmp_path / "m.json"
    model.save(path, {"training": card, "fingerprint": FINGERPRINT})
    from kselect.selector.model.cost_model import CostModel

    assert CostModelRanker(CostModel.load(path), FINGERPRINT).dtypes == ("bf16", "tf32")
