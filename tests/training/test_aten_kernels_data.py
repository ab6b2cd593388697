"""A dataset's aten_kernels.jsonl: written and read back, attached to every row of its problem,
refused with the line named when broken, and carried into training's features by load_data."""

import json

import numpy as np
import pandas as pd
import pytest

from kselect.kernels import Candidate, Problem
from kselect.kernels.aten.launched import ATEN_KERNEL_COLUMNS
from kselect.selector.model.features import FEATURE_NAMES, featurize_frame
from kselect.training.data.aten_kernels import (
    AtenKernelsError,
    attach,
    path_of,
    read_records,
    write_records,
)
from kselect.training.data.rows import row_for
from kselect.training.learn.held_out import load_data

from conftest import H200_DATA

NVJET = "nvjet_sm90_tst_64x8_64x16_1x1_h_bz_TNT"


def _frame():
    rows = []
    for p in (Problem(4, 16, 256), Problem(8, 32, 512)):
        for c in (
            Candidate.make("aten", "mm"),
            Candidate.make("triton", "mm", BLOCK_M=16, BLOCK_N=16, BLOCK_K=64, GROUP_M=8, num_stages=2, num_warps=2),
        ):
            rows.append(row_for(p, c, status="ok", time_ms=0.003, workload="random"))
    return pd.DataFrame(rows)


def test_round_trip_and_attach(tmp_path):
    df = _frame()
    key = Problem(4, 16, 256).key
    write_records(tmp_path, [{"key": key, "card": "NVIDIA H100", "kernels": [NVJET] * 3, "per_call": 1.0}])
    got = read_records(tmp_path)
    assert list(got) == [key]
    out = attach(df, got)
    assert len(out) == len(df) and list(out.columns[: len(df.columns)]) == list(df.columns)
    mine = out[out.problem_key == key]
    assert (mine.aten_stages == 16).all() and (mine.aten_tile_a == 64).all()
    assert out[out.problem_key != key][list(ATEN_KERNEL_COLUMNS)].isna().all().all()  # no record: missing
    assert read_records(tmp_path / "none") == {} and attach(df, {}) is df


def test_broken_file_names_its_line(tmp_path):
    path_of(tmp_path).write_text('{"key": "mm:1x1x1:bf16:nt", "kernels": ["k"], "per_call": 1}\nnot json\n')
    with pytest.raises(AtenKernelsError, match=r"aten_kernels.jsonl:2"):
        read_records(tmp_path)
    path_of(tmp_path).write_text('{"key": "mm:1x1x1:bf16:nt", "kernels": [], "per_call": 1}\n')
    with pytest.raises(AtenKernelsError, match="no kernel names"):
        read_records(tmp_path)


def test_committed_dataset_trains_with_atens_kernels():
    df, fp = load_data(H200_DATA)
    records = read_records(H200_DATA)
    assert set(records) == set(df.problem_key) and all("H100" in r["card"] for r in records.values())
    sample = df.groupby("problem_key").head(1)
    X = featurize_frame(sample, fp)
    cols = [FEATURE_NAMES.index(c) for c in ATEN_KERNEL_COLUMNS]
    assert np.isfinite(X[:, cols]).all()
    # the random family's 4x16x256: cuBLAS ran a 16-stage pipeline over K = 256's four k-steps
    row = dict(zip(FEATURE_NAMES, X[sample.problem_key.to_numpy() == "mm:4x16x256:bf16:nt"][0]))
    assert row["aten_stages"] == 16 and row["aten_k_iters_over_stages"] == 0.25
    assert json.loads(path_of(H200_DATA).read_text().splitlines()[0])["key"] < max(records)


def test_the_dataset_hash_covers_the_record(tmp_path):
    from kselect.training.learn.train import dataset_hash

    _frame().to_parquet(tmp_path / "measurements.parquet")
    before = dataset_hash(tmp_path)
    write_records(tmp_path, [{"key": Problem(4, 16, 256).key, "card": "x", "kernels": [NVJET], "per_call": 1.0}])
    assert dataset_hash(tmp_path) != before  # a model trained with these columns names them in its hash
