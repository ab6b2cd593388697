"""The grouped-GEMM collector on the CPU: ATen's real `_grouped_mm` per routing, rows in the one
dataset schema that read back as the problems measured, a resume that redoes nothing, and the
Inductor path through a real max-autotune lowering."""

from __future__ import annotations

import pytest

from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN
from kselect.training.data.dataset import DatasetDir, load_dataset
from kselect.training.measure import grouped_collect as grouped
from kselect.training.workloads.moe import moe_training_problems, moe_unseen_problems

SHAPE = GroupedProblem(4, 40, 24, 32, model="tiny/gate_up/t10")
PROBLEMS = [SHAPE, SHAPE.with_routing("zipf1.2", seed=1)]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    out = tmp_path_factory.mktemp("grouped-data")
    first = grouped.collect_grouped(PROBLEMS, out, measure=grouped.measure_aten, device="cpu", target_ms=0.5)
    return out, first


def test_each_routing_is_one_problem_and_its_rows_read_back_as_it(collected):
    out, first = collected
    assert first == {"measured": 2, "skipped": 0, "rows": 2, "failed_rows": 0}
    df = load_dataset(out)
    assert sorted(df["problem_key"]) == sorted(p.key for p in PROBLEMS)
    assert set(df["op"]) == {"grouped_mm"} and set(df["batch"]) == {4} and set(df["candidate_key"]) == {ATEN.key}
    assert (df["status"] == "ok").all() and (df["time_ms"] > 0).all() and (df["rel_error"] == 0).all()
    back = sorted((grouped.grouped_problem_of(row) for _, row in df.iterrows()), key=lambda p: p.key)
    assert back == sorted(PROBLEMS, key=lambda p: p.key)
    assert {p.model for p in back} == {SHAPE.model}


def test_a_rerun_skips_every_problem_on_disk(collected):
    out, _ = collected
    parts = sorted(DatasetDir(out).parts_dir.glob("*.parquet"))
    again = grouped.collect_grouped(PROBLEMS, out, measure=grouped.measure_aten, device="cpu")
    assert again["measured"] == 0 and again["skipped"] == 2
    assert sorted(DatasetDir(out).parts_dir.glob("*.parquet")) == parts


def test_a_wrong_result_is_a_failed_row_not_a_timing():
    ops = grouped.run.grouped_operands(SHAPE, "cpu")
    ref = grouped.run.aten_grouped(ops)
    fields = grouped._timed(lambda o: lambda: grouped.run.aten_grouped(o) * 1.5, [ops], ref, "cpu", 0.5)
    assert fields["status"] == "wrong_result" and "time_ms" not in fields
    failed = grouped._timed(lambda o: (_ for _ in ()).throw(RuntimeError("no kernel")), [ops], ref, "cpu", 0.5)
    assert failed["status"] == "compile_error" and "no kernel" in failed["error"]


def test_the_workload_sets_are_the_issues_models_and_disjoint():
    train, unseen = moe_training_problems(), moe_unseen_problems()
    shapes = {(p.G, p.M, p.N, p.K) for p in train}
    assert len(shapes) >= 60 and {p.routing for p in train} == {"uniform", "zipf1.2"}
    assert {p.model.split("/")[0] for p in train} >= {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3-ep8"}
    assert not shapes & {(p.G, p.M, p.N, p.K) for p in unseen}
    assert min(p.M for p in train) == 1 and max(p.M for p in train) >= 8192


def test_a_triton_choice_reads_as_its_config_from_inductors_description():
    from types import SimpleNamespace

    from kselect.kernels.candidate import Candidate

    # Inductor's description of a grouped_mm choice: every template kwarg sorted, then the launch
    described = (
        "A_IS_2D=True, A_IS_K_MAJOR=True, BLOCK_K=128, BLOCK_M=64, BLOCK_N=256, B_IS_2D=False, "
        "NUM_CONSUMER_GROUPS=1, NUM_SMS=132, SCALED=False, USE_TMA_LOAD=True, num_stages=3, num_warps=8"
    )
    choice = SimpleNamespace(name="triton_grouped_mm_17", description=described)
    assert grouped.run.choice_candidate(choice) == Candidate.make(
        "triton", "grouped_mm", BLOCK_M=64, BLOCK_N=256, BLOCK_K=128, num_stages=3, num_warps=8
    )
    assert grouped.run.choice_candidate(SimpleNamespace(name="triton_mm_3", description=described)) is None
    assert grouped.run.choice_candidate(SimpleNamespace(name="triton_grouped_mm_1", description="")) is None


def test_stock_autotuning_is_recorded_beside_the_rows(tmp_path):
    import json

    counts = grouped.collect_grouped(
        PROBLEMS[:1], tmp_path, measure=grouped.measure_inductor, device="cpu", target_ms=0.5, stock=True
    )
    assert counts["measured"] == 1
    picks = json.loads((tmp_path / f"shard-0-1-{grouped.STOCK_PICKS_FILE}").read_text())
    assert picks[SHAPE.key]["candidate"] in ("", ATEN.key)  # one choice on the CPU: nothing benchmarked
    assert picks[SHAPE.key]["compile_s"] > 0 and picks[SHAPE.key]["one_kept_s"] > 0
    rows = load_dataset(tmp_path)  # the lowering's own choices, measured on the routing
    assert list(rows["candidate_key"]) == [ATEN.key] and rows["rel_error"].iloc[0] == 0
