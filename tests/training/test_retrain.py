"""`kselect retrain`: the stages run in order, a stopped run resumes at its first unfinished
stage, and a directory made with other settings is refused. The GPU's timings are replaced by
the synthetic analytic model (training/data/synthetic.py); shapes, compaction, training, evaluation
and the card are the real ones."""

import json

import pytest

from kselect.kernels.candidate_list import candidate_list
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.rows import row_for
from kselect.training.data.synthetic import FINGERPRINT, synthetic_time_ms
from kselect.training.learn.retrain import RetrainError, RetrainPlan, run
from kselect.training.measure.collect_plan import parse_space


class SyntheticGpu:
    """Stands in for the GPU collector: analytic times for the same candidate lists."""

    def __init__(self, fail_on_space=None):
        self.calls, self.fail_on_space = [], fail_on_space

    def __call__(self, problems, out, *, space, max_minutes, device, workloads):
        self.calls.append(space)
        if space == self.fail_on_space:
            raise RuntimeError("the machine went away")
        ds = DatasetDir(out)
        ds.write_fingerprint(FINGERPRINT)
        name, n = parse_space(space)
        rows = []
        for p in problems:
            for c in candidate_list(p, ["aten", "triton"], name, n):
                t = synthetic_time_ms(p, c)
                rows.append(
                    row_for(
                        p,
                        c,
                        status="ok" if t is not None else "pruned",
                        time_ms=t if t is not None else float("nan"),
                        space=name,
                        oracle=name == "exhaustive",
                        fingerprint_id=FINGERPRINT["fingerprint_id"],
                        workload=workloads[p.key],
                    )
                )
        ds.append(rows, "synthetic")
        return {"problems": len(problems)}


def _plan(tmp_path, **kw):
    return RetrainPlan(
        out=str(tmp_path / "run"), gpu_minutes=1, sample_shapes=6, full_shapes=2, folds=2, cv_folds=0, **kw
    )


def test_a_stopped_retrain_resumes_and_ends_with_a_model_and_its_card(tmp_path):
    stopped = SyntheticGpu(fail_on_space="exhaustive")
    with pytest.raises(RuntimeError):
        run(_plan(tmp_path), log=lambda m: None, collect_fn=stopped)
    state = json.loads((tmp_path / "run" / "retrain.json").read_text())
    assert set(state["done"]) == {"shapes", "collect-sample"}

    again = SyntheticGpu()
    lines = []
    state = run(_plan(tmp_path), log=lines.append, collect_fn=again)
    assert again.calls == ["exhaustive"]  # the sampled shapes were not measured twice
    assert list(state["done"]) == [
        "shapes",
        "collect-sample",
        "collect-full",
        "compact",
        "probe-aten",
        "train",
        "evaluate",
    ]
    assert "no CUDA device" in state["done"]["probe-aten"]["skipped"]  # its columns stay missing
    assert any("about" in line and "min left" in line for line in lines)
    card = (tmp_path / "run" / "model.md").read_text()
    assert "Held-out" in card
    assert (tmp_path / "run" / "model.meta.json").exists()


def test_a_directory_started_with_other_settings_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "retrain.json").write_text(json.dumps({**_plan(tmp_path, seed=1).__dict__}))
    with pytest.raises(RetrainError, match="other settings"):
        run(_plan(tmp_path), log=lambda m: None, collect_fn=SyntheticGpu())


def test_dtypes_are_dealt_over_the_same_shapes_and_bf16_alone_is_unchanged(tmp_path):
    """Catches: several dtypes drawing other shapes than bf16 alone would (the same workloads,
    sampled, is the point); an IEEE fp32 shape of minutes per candidate let in; a run directory
    recorded before --dtypes existed refused on resume; a bad dtype named late."""
    from kselect.training.learn.retrain import MAX_FP32_FLOPS, choose_shapes

    alone, _ = choose_shapes(0, 40, 0)
    mixed, _ = choose_shapes(0, 40, 0, ["bf16", "fp16", "tf32", "fp32"])
    assert {p.dtype for p in alone} == {"bf16"}
    assert {p.dtype for p in mixed} == {"bf16", "fp16", "tf32", "fp32"}
    assert [p.key for p in alone[:5]] == [p.key for p in choose_shapes(0, 5, 0)[0]]
    assert all(p.flops <= MAX_FP32_FLOPS for p in mixed if p.dtype == "fp32")
    same = {(p.M, p.N, p.K, p.op, p.layout) for p in alone}
    assert [p for p in mixed if p.dtype == "bf16"][0] in alone  # bf16 keeps its first shape
    assert len(same & {(p.M, p.N, p.K, p.op, p.layout) for p in mixed}) >= 10  # the same workloads
    old = {**_plan(tmp_path).__dict__}
    old.pop("dtypes")  # a state file written before --dtypes
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "retrain.json").write_text(json.dumps(old))
    from kselect.training.learn.retrain import load_or_start

    assert load_or_start(_plan(tmp_path)).dtypes == ["bf16"]
    with pytest.raises(RetrainError, match="dtypes.*int4"):
        RetrainPlan(out="x", dtypes=["bf16", "int4"])


def test_bad_budget_is_named():
    with pytest.raises(RetrainError, match="gpu-minutes"):
        RetrainPlan(out="x", gpu_minutes=0)


def test_a_moved_run_directory_resumes_where_it_is_now(tmp_path):
    """A run stopped on a GPU machine and copied back resumes in its new place."""
    import shutil

    with pytest.raises(RuntimeError):
        run(_plan(tmp_path), log=lambda m: None, collect_fn=SyntheticGpu(fail_on_space="exhaustive"))
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "run", moved)
    again = SyntheticGpu()
    plan = RetrainPlan(out=str(moved), gpu_minutes=1, sample_shapes=6, full_shapes=2, folds=2, cv_folds=0)
    state = run(plan, log=lambda m: None, collect_fn=again)
    assert again.calls == ["exhaustive"] and state["out"] == str(moved)
    assert (moved / "model.meta.json").exists() and not (tmp_path / "run").exists()
