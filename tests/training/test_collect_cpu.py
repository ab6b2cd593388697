"""Collection end to end on the CPU (ATen/MKL through the same harness), crash and resume.

What was measured is checked on the rows as written (every part file and the compact file),
not on DatasetDir.load(), which keeps one preferred row per identity and so hides a row
written twice."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from kselect.kernels import Problem
from kselect.training.cli.main import main
from kselect.training.data.dataset import KEY, DatasetDir
from kselect.training.measure.collect import collect
from kselect.training.measure.collect_plan import CollectError, parse_shard, parse_space, shard_problems
from kselect.training.measure.supervisor import child_visible_device

SHAPES = [
    Problem(m, n, k, "fp32")
    for m, n, k in [
        (8, 64, 32),
        (16, 32, 64),
        (33, 17, 9),
        (4, 4, 4),
        (100, 50, 25),
        (7, 9, 11),
        (64, 64, 64),
        (3, 5, 7),
        (12, 24, 48),
        (31, 33, 35),
    ]
]


def _write_csv(path, problems):
    path.write_text("M,N,K,dtype\n" + "".join(f"{p.M},{p.N},{p.K},{p.dtype}\n" for p in problems))


def _collect_command(out, shapes_csv, target_ms: str, extra=()) -> list[str]:
    """`kselect collect` of ATen on the CPU over the shapes in `shapes_csv`, into `out`."""
    return [
        sys.executable,
        "-m",
        "kselect.training.cli.main",
        "collect",
        "--shapes-file",
        str(shapes_csv),
        "--backends",
        "aten",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--target-ms",
        target_ms,
        *extra,
    ]


def _rows_written(out) -> pd.DataFrame:
    """Every row of every published part file and of the compact file, as on disk."""
    files = sorted((out / "parts").glob("*.parquet")) + sorted(out.glob("measurements.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame(columns=KEY)


def _measured_once_each(out, problems) -> pd.DataFrame:
    """The rows written: one `ok` row per problem (ATen's one candidate each), none twice."""
    rows = _rows_written(out)
    assert sorted(rows["problem_key"]) == sorted(p.key for p in problems), rows[KEY]  # nothing lost, nothing twice
    assert not rows.duplicated(KEY).any(), rows[KEY]
    assert (rows["status"] == "ok").all(), rows[[*KEY, "status", "error"]]
    return rows


def _collect(out, env=None, shapes_csv=None, extra=()):
    cmd = _collect_command(out, shapes_csv, "0.02", extra)
    return subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300)


def test_collect_cpu_end_to_end(tmp_path):
    out = tmp_path / "ds"
    res = collect(SHAPES[:4], out, backends=["aten"], space="exhaustive", device="cpu", target_ms=0.02)
    assert res["problems"] == 4 and res["crashes"] == 0
    df = _measured_once_each(out, SHAPES[:4])
    assert (df["time_ms"] > 0).all()
    assert (df["rel_error"] < 1e-5).all()  # checked against the fp32 reference
    fp = json.loads((out / "fingerprint.json").read_text())
    assert fp["gpu_name"] == "cpu" and fp["torch_version"] and fp["fingerprint_id"]
    assert set(df["fingerprint_id"]) == {fp["fingerprint_id"]}


def test_worker_crash_mid_collection_loses_and_duplicates_nothing(tmp_path):
    """A worker killed at its 4th candidate: the fresh worker measures the one in flight and the
    rest, never again what is on disk.

    Fails on the mutation: the worker measuring candidates already done (the `not in done`
    filter of run_worker, training/measure/collect_worker.py): rows written twice, hidden by load()."""
    csv = tmp_path / "s.csv"
    _write_csv(csv, SHAPES)
    out = tmp_path / "ds"
    res = _collect(out, {"KSELECT_COLLECT_FAULT": f"4:{tmp_path / 'fired'}"}, csv)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "fired").exists()
    assert json.loads(res.stdout.strip().splitlines()[-1])["crashes"] == 1
    # one death may come from outside: the candidate is retried in a fresh worker and measured
    _measured_once_each(out, SHAPES)
    assert "retrying it once in a fresh worker" in res.stderr


@pytest.mark.slow
def test_killed_run_resumes_on_rerun(tmp_path):
    """The whole collection killed once some rows are on disk: a rerun measures only the rest,
    and a third finds nothing to do (it writes nothing).

    Fails on the same mutation as the crash test (done candidates measured again)."""
    csv = tmp_path / "s.csv"
    _write_csv(csv, SHAPES)
    out = tmp_path / "ds"
    # Kill the whole collection (supervisor and worker) once some rows are on disk.
    cmd = _collect_command(out, csv, "20")
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not list((out / "parts").glob("*.parquet")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(_rows_written(out))
    assert before < len(SHAPES), "the kill came too late to test a resume"
    assert _collect(out, shapes_csv=csv).returncode == 0
    written = _measured_once_each(out, SHAPES)
    # A third run finds nothing left to do.
    assert _collect(out, shapes_csv=csv).returncode == 0
    assert len(_rows_written(out)) == len(written) and len(DatasetDir(out).load()) == len(SHAPES)


def test_shards_partition_the_problems():
    parts = [shard_problems(SHAPES, (i, 3)) for i in range(3)]
    keys = [p.key for part in parts for p in part]
    assert sorted(keys) == sorted(p.key for p in SHAPES) and len(set(keys)) == len(SHAPES)
    assert parts == [shard_problems(list(reversed(SHAPES)), (i, 3)) for i in range(3)]


def test_a_worker_gets_the_card_its_index_names_among_the_visible_ones():
    # Slurm, Ray and Kubernetes narrow CUDA_VISIBLE_DEVICES: index 1 is the second card listed
    assert child_visible_device(1, "4,6") == "6"
    assert child_visible_device(0, "GPU-5e0c, GPU-77aa") == "GPU-5e0c"
    assert child_visible_device(2, None) == "2"  # nothing narrowed: the index is the card
    with pytest.raises(CollectError, match="GPU 1 is not visible"):
        child_visible_device(1, "3")


@pytest.mark.parametrize("spec", ["3/3", "a/b", "1", "-1/2"])
def test_bad_shard_spec(spec):
    with pytest.raises(CollectError, match="shard"):
        parse_shard(spec)


@pytest.mark.parametrize("spec", ["sample:0", "sample:x", "everything"])
def test_bad_space_spec(spec):
    with pytest.raises(CollectError, match="--space"):
        parse_space(spec)


def test_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    csv = tmp_path / "s.csv"
    _write_csv(csv, SHAPES[:1])
    assert main(["collect", "--shapes-file", str(csv), "--backends", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("M,N,K\n0,1,1\n")
    assert (
        main(
            [
                "collect",
                "--shapes-file",
                str(bad),
                "--device",
                "cpu",
                "--backends",
                "aten",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "M must be positive" in capsys.readouterr().err
