"""Workload sets are deterministic, valid and cover what the issue asks for."""

import pytest

from kselect.kernels import ProblemError
from kselect.training.workloads.shapes import (
    MODELS,
    TOKEN_COUNTS,
    WORKLOADS,
    dedup,
    read_shapes_csv,
    workload,
    write_shapes_csv,
)


def test_workloads_are_deterministic_and_valid():
    for name in WORKLOADS:
        a, b = workload(name, seed=3), workload(name, seed=3)
        assert a == b and len(a) > 0
        assert all(p.M > 0 and p.N > 0 and p.K > 0 for p in a)
    assert workload("random", seed=1) != workload("random", seed=2)


def test_coverage_of_models_layers_tokens_and_layouts():
    fwd = workload("forward")
    assert {p.model for p in fwd} == set(MODELS)
    ms = {p.M for p in fwd if p.model == "llama3-8b"}
    assert min(ms) == 1 and max(ms) == 16384 and any(m & (m - 1) for m in ms)  # non-powers of two
    assert (333, 6144, 4096) in {(p.M, p.N, p.K) for p in fwd}  # llama3-8b qkv
    assert (7, 128256, 4096) in {(p.M, p.N, p.K) for p in fwd}  # lm-head
    bwd = workload("backward")
    assert {p.layout for p in bwd} == {"nn", "tn"}
    assert {p.op for p in workload("attention")} == {"bmm"}
    assert len(dedup(fwd + fwd)) == len(dedup(fwd))
    assert 1 in TOKEN_COUNTS and 16384 in TOKEN_COUNTS


def test_random_shapes_are_log_uniform_and_aligned():
    rnd = workload("random", n_random=400, seed=0)
    ms = sorted(p.M for p in rnd)
    assert ms[0] < 16 and ms[-1] > 4096  # spans the range, both tails
    assert all(p.N % 16 == 0 and p.K % 256 == 0 for p in rnd)


def test_csv_round_trip(tmp_path):
    ps = workload("forward", models=["gpt2"]) + workload("attention")
    path = tmp_path / "s.csv"
    write_shapes_csv(ps, path)
    assert read_shapes_csv(path) == ps


@pytest.mark.parametrize(
    "text, needle",
    [
        ("M,N\n1,2\n", "missing column"),
        ("M,N,K\n1,2,0\n", ":2: K must be positive"),
        ("M,N,K,dtype\n1,2,3,int4\n", "unknown dtype"),
    ],
)
def test_bad_csv_is_a_clear_error(tmp_path, text, needle):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ProblemError, match=needle):
        read_shapes_csv(path)


def test_unknown_workload_and_model():
    with pytest.raises(ProblemError, match="unknown workload"):
        workload("nope")
    with pytest.raises(ProblemError, match="unknown model"):
        workload("forward", models=["gpt5"])


def test_held_out_families_stay_out_of_training_workloads_and_data():
    """The unseen benchmark's families appear in no training workload and no shipped dataset."""
    import pandas as pd

    from kselect.training.workloads.shapes import TRAINING_WORKLOADS, UNSEEN_MODELS, unseen_shapes, workload

    unseen = set(UNSEEN_MODELS)
    for name in TRAINING_WORKLOADS:
        assert not {p.model for p in workload(name)} & unseen, name
    data = pd.read_parquet("data/h200-bf16/measurements.parquet", columns=["model"])
    assert not set(data["model"]) & unseen
    bench = unseen_shapes()
    assert len(bench) == 70 and {p.model for p in bench} == unseen


def test_padding_as_compiled_follows_the_compute_bound_rule():
    from kselect.training.workloads.shapes import padded_as_compiled

    assert padded_as_compiled(2048, 50257, 768) == 50264  # compute-bound: padded to 8
    assert padded_as_compiled(16, 50257, 768) == 50257  # memory-bound: as written
    assert padded_as_compiled(2048, 4096, 768) == 4096  # aligned already
