"""The console script: subcommands listed, dataset summary JSON on the committed dataset."""

import json
import subprocess
import sys

from kselect.training.cli.main import SUBCOMMANDS, main

from conftest import H200_DATA


def test_help_lists_every_subcommand():
    out = subprocess.run(
        [sys.executable, "-m", "kselect.training.cli.main", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    for name in ("shapes", "collect", "dataset", *SUBCOMMANDS):
        assert name in out.stdout


def test_dataset_summary_json_on_committed_dataset(capsys):
    assert main(["dataset", "summary", str(H200_DATA), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    for key in (
        "shapes",
        "rows",
        "candidates_per_shape_min",
        "candidates_per_shape_median",
        "oracle_shapes",
        "failed_rows",
        "fingerprint",
    ):
        assert key in s
    assert s["fingerprint"]["gpu_name"] == "NVIDIA H200"
    assert s["rows"] > 30000 and s["shapes"] >= 150
    assert s["candidates_per_shape_median"] >= 200


def test_dataset_summary_names_a_missing_directory(tmp_path, capsys):
    assert main(["dataset", "summary", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_shapes_command_exports_csv(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["shapes", "--workload", "forward", "--models", "gpt2", "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0].startswith("M,N,K")
    assert main(["shapes", "--workload", "random", "--n-random", "17", "--count"]) == 0
    assert capsys.readouterr().out.strip() == "17"


def test_bench_rank_times_the_shipped_model_from_the_command_line():
    """In its own process: the bench pins the process it runs in to one core."""
    from conftest import REPO

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kselect.training.cli.main",
            "bench",
            "rank",
            "--model",
            str(REPO / "models" / "h200-bf16.json"),
            "--reps",
            "3",
            "--shape",
            "256x512x1024",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    idle = json.loads(out.stdout)["idle"]
    assert idle["reps"] == 3 and idle["candidates"] > 100 and idle["total_median_ms"] > 0


def test_bad_shapes_are_an_error_before_anything_is_measured(tmp_path, capsys):
    assert main(["bench", "rank", "--model", "m.json", "--shape", "4096x4096"]) == 2
    assert "--shape '4096x4096': expected MxNxK" in capsys.readouterr().err
    assert main(["faithfulness", "--shapes", "64x64x64,12x", "--out", str(tmp_path / "f")]) == 2
    assert "shape '12x': expected MxNxK" in capsys.readouterr().err
    assert main(["faithfulness", "--sample", "4", "--out", str(tmp_path / "f")]) == 2
    assert "--sample takes its problems from --shapes-file" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


def _subparsers(parser, path=()):
    """(command path, parser) of every subcommand below `parser`, nested ones included."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name), child
                yield from _subparsers(child, (*path, name))


def test_every_subcommand_formats_its_help():
    # Help text made from setting declarations may hold a literal '%', which argparse's
    # %-formatting of help strings rejects unless escaped: --help must work everywhere.
    from kselect.training.cli.main import build_parser

    found = list(_subparsers(build_parser()))
    assert len(found) >= len(SUBCOMMANDS)
    for path, sub in found:
        assert sub.format_help(), path
    assert any(path == ("bench", "e2e") for path, _ in found)
