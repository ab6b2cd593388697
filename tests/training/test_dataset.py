"""Dataset schema round trip, corrupt part files, compaction, fingerprint guard."""

import json

import pandas as pd
import pytest

from kselect.kernels import Candidate, Problem
from kselect.training.data.dataset import (
    COLUMNS,
    CorruptShardError,
    DatasetDir,
    DatasetError,
    load_dataset,
    summarize,
)
from kselect.training.data.rows import row_for


def _rows(n, start=0, status="ok"):
    out = []
    for i in range(start, start + n):
        p = Problem(16 + i, 64, 128, model="gpt2")
        c = Candidate.make("triton", "mm", BLOCK_M=16, BLOCK_N=64, BLOCK_K=32, num_stages=2, num_warps=4, GROUP_M=8)
        out.append(
            row_for(p, c, status=status, time_ms=0.01 * (i + 1) if status == "ok" else float("nan"), workload="forward")
        )
    return out


def test_schema_round_trip(tmp_path):
    ds = DatasetDir(tmp_path / "d")
    rows = _rows(5)
    ds.append(rows, "w0")
    df = ds.load()
    assert list(df.columns) == list(COLUMNS) and len(df) == 5
    assert df["time_ms"].tolist() == pytest.approx([r["time_ms"] for r in rows])
    assert json.loads(df["params"][0])["BLOCK_N"] == 64
    assert df["BLOCK_N"].tolist() == [64] * 5


def test_corrupt_part_never_takes_good_rows(tmp_path):
    ds = DatasetDir(tmp_path / "d")
    ds.append(_rows(3), "w0")
    ds.append(_rows(2, start=3), "w1")
    bad = ds.parts_dir / "w2-broken.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(CorruptShardError, match="w2-broken.parquet"):
        ds.load()
    assert len(ds.load(on_corrupt="skip")) == 5 and bad.exists()
    assert len(ds.done_keys()) == 5  # resume quarantines, keeps good rows
    assert not bad.exists() and (ds.root / "quarantine" / bad.name).exists()
    assert len(ds.load()) == 5


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "x.parquet"
    pd.DataFrame({"problem_key": ["a"]}).to_parquet(path)
    with pytest.raises(DatasetError, match="missing column"):
        load_dataset(path)


def test_compaction_is_lossless_and_deduplicates(tmp_path):
    ds = DatasetDir(tmp_path / "d")
    ds.append(_rows(4), "w0")
    ds.append(_rows(2, start=2), "w1")  # overlaps two identities
    assert ds.compact() == 4
    assert not list(ds.parts_dir.glob("*.parquet"))
    ds.append(_rows(1, start=4), "w0")
    assert len(ds.load()) == 5 and ds.compact() == 5


def test_fingerprint_guard(tmp_path):
    ds = DatasetDir(tmp_path / "d")
    ds.write_fingerprint({"fingerprint_id": "aaa", "gpu_name": "NVIDIA H200"})
    ds.write_fingerprint({"fingerprint_id": "aaa", "gpu_name": "NVIDIA H200"})
    with pytest.raises(DatasetError, match="measured on NVIDIA H200"):
        ds.write_fingerprint({"fingerprint_id": "bbb", "gpu_name": "NVIDIA A100"})


def test_summary_counts(tmp_path):
    ds = DatasetDir(tmp_path / "d")
    ds.write_fingerprint({"fingerprint_id": "aaa", "gpu_name": "NVIDIA H200"})
    ds.append(_rows(3) + _rows(1, start=3, status="launch_error"), "w0")
    s = summarize(ds.root)
    assert (s["shapes"], s["rows"], s["failed_rows"], s["ok_rows"]) == (4, 4, 1, 3)
    assert s["fingerprint"]["gpu_name"] == "NVIDIA H200"


def test_one_fingerprint_id_for_datasets_and_the_selector():
    """The id a dataset stores is the one selector/fingerprint.py computes from its identity keys,
    and a CPU's id changes with its thread count (what the selector's decision cache keys on)."""
    from kselect.selector.fingerprint import fingerprint_id

    stored = json.loads(open("data/h200-bf16/fingerprint.json").read())
    assert fingerprint_id(stored) == stored["fingerprint_id"]
    cpu = {"device_type": "cpu", "torch_version": "2.13.0", "cpu": "x86_64"}
    assert fingerprint_id({**cpu, "threads": 2}) != fingerprint_id({**cpu, "threads": 4})
