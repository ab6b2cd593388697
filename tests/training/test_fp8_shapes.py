"""The fp8 workloads: enough LLM projection shapes over decode and prefill, both scaling kinds,
held-out families kept apart, and the committed shape CSVs equal to what the code generates."""

from pathlib import Path

from kselect.training.workloads.fp8_shapes import FP8_MODELS, FP8_UNSEEN_MODELS, fp8_workload
from kselect.training.workloads.shapes import read_shapes_csv, workload


def test_fp8_training_set_spans_decode_and_prefill():
    ps = fp8_workload("fp8")
    assert len(ps) >= 150 and len({p.key for p in ps}) == len(ps)
    assert {p.op for p in ps} == {"scaled_mm"} and {p.dtype for p in ps} == {"fp8e4m3"}
    assert {p.scaling for p in ps} == {"rowwise", "tensorwise"}
    ms = {p.M for p in ps}
    assert min(ms) == 1 and max(ms) == 8192 and {8, 32, 64} <= ms
    assert not {p.N for p in ps} & {cfg.vocab for cfg in FP8_MODELS.values()}  # no lm_head
    assert {p.model for p in ps} >= {"llama3-8b", "llama3-70b", "mixtral-8x22b", "qwen2.5-14b", "qwen2.5-72b"}


def test_unseen_fp8_families_are_held_out():
    seen, unseen = fp8_workload("fp8"), workload("fp8-unseen")
    assert len(unseen) >= 20
    assert not {p.model for p in unseen} & set(FP8_MODELS) and {p.model for p in unseen} == set(FP8_UNSEEN_MODELS)
    assert not {p.key for p in unseen} & {p.key for p in seen}


def test_committed_csvs_are_the_workloads():
    for name in ("fp8", "fp8-unseen"):
        assert read_shapes_csv(Path(__file__).resolve().parents[2] / f"data/shapes/{name}.csv") == workload(name)
