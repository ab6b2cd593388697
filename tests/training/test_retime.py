"""`kselect retime` and the labels it feeds: which shapes it picks, how re-timed rows move the
labels, and the whole path on the CPU (a real max-autotune compile whose ATen and CPP choices
verify times with the collector's harness, written as a dataset the trainer reads)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.training.data.dataset import DatasetDir, conform, load_dataset
from kselect.training.data.labels import RETIMED_METHOD_PREFIX, apply_retimed, retime_summary
from kselect.training.data.rows import row_for
from kselect.training.measure.retime import RetimeError, plan_shapes, result_rows


def _rows(problem: Problem, times: dict[str, float], **extra) -> list[dict]:
    out = []
    for key, ms in times.items():
        backend, template, *rest = key.split(":")
        params = dict(zip(("BLOCK_M",), [int(rest[0])])) if rest else {}
        cand = Candidate.make(backend, template, **params)
        out.append(row_for(problem, cand, time_ms=ms, method="cuda_graph", **extra))
    return out


SKINNY = Problem(8, 128256, 4096)
SQUARE = Problem(4096, 4096, 4096)
ODD = Problem(64, 50257, 768)


@pytest.fixture
def collector() -> pd.DataFrame:
    rows = (
        _rows(
            SKINNY,
            {
                "aten:mm": 1.0,
                "triton:mm:16": 0.80,
                "triton:mm:32": 0.90,
                "triton:persistent_tma:16": 0.85,
                "triton:mm:64": 1.20,
                "triton:decompose_k:16": 0.5,
            },
        )
        + _rows(SQUARE, {"aten:mm": 1.0, "triton:mm:128": 1.30, "triton:mm:64": 1.50})
        + _rows(ODD, {"aten:mm": 1.0, "triton:mm:16": 0.2, "triton:mm:32": 0.3})
    )
    rows.append(row_for(SQUARE, Candidate.make("triton", "mm", BLOCK_M=256), status="launch_error"))
    return conform(pd.DataFrame(rows))


def test_plan_keeps_competitive_shapes_most_claimed_gain_first(collector):
    work = plan_shapes(collector, top=2)
    # SQUARE: Triton 1.3x slower than ATen -> not re-timed; ODD claims 5x, SKINNY 1.25x
    assert [w.problem.key for w in work] == [ODD.key, SKINNY.key]
    skinny = work[1]
    assert [r["candidate_key"] for r in skinny.rows] == ["aten:mm", "triton:mm:BM16", "triton:persistent_tma:BM16"]
    assert skinny.claimed_speedup == pytest.approx(1 / 0.8)
    assert [w.problem.key for w in plan_shapes(collector, top=1, all_shapes=True)] == [ODD.key, SKINNY.key, SQUARE.key]
    assert len(plan_shapes(collector, top=1, within=1.4)) == 3  # 1.3x slower is within 1.4x
    with pytest.raises(RetimeError, match="decompose_k"):
        plan_shapes(collector, templates=("triton:decompose_k",))
    with pytest.raises(RetimeError, match="top"):
        plan_shapes(collector, top=0)


def test_retimed_labels_replace_measured_rows_and_scale_their_template(collector):
    common = {"space": "retime", "fingerprint_id": "x", "worker": "w"}
    record = {
        "ms": {"aten:mm": 0.98, "triton:mm:BM16": 1.04, "triton:persistent_tma:BM16": 0.95},
        "method": "cuda_graph",
        "dropped": {"triton:mm:BM32": "wrong result (relative error 1 vs ATen)"},
        "stats": {"aten:mm": {"time_min_ms": 0.97, "time_max_ms": 0.99, "spread": 0.01, "reps": 50, "noisy": False}},
    }
    wanted = [
        r
        for r in collector.to_dict("records")
        if r["problem_key"] == SKINNY.key
        and r["candidate_key"] in ("aten:mm", "triton:mm:BM16", "triton:mm:BM32", "triton:persistent_tma:BM16")
    ]
    retimed = conform(pd.DataFrame(result_rows(wanted, record, "", common)))
    by = retimed.set_index("candidate_key")
    assert by.loc["triton:mm:BM32", "status"] == "wrong_result"
    assert by.loc["aten:mm", "time_min_ms"] == 0.97 and (retimed["space"] == "retime").all()

    after = apply_retimed(collector, retimed).set_index(["problem_key", "candidate_key"])
    s = lambda c: after.loc[(SKINNY.key, c)]  # noqa: E731
    assert s("aten:mm")["time_ms"] == 0.98 and s("aten:mm")["method"] == RETIMED_METHOD_PREFIX + "cuda_graph"
    assert s("triton:mm:BM16")["time_ms"] == 1.04
    # the wrong Inductor kernel keeps its collector row; it is not a label for mm's ratio either
    assert s("triton:mm:BM32")["time_ms"] == pytest.approx(0.90 * 1.3)  # mm's ratio 1.04 / 0.80
    assert s("triton:mm:BM64")["time_ms"] == pytest.approx(1.20 * 1.3)
    assert s("triton:persistent_tma:BM16")["time_ms"] == 0.95  # its own template, re-timed
    assert s("triton:decompose_k:BM16")["time_ms"] == 0.5  # not re-timed, no ratio: as collected
    untouched = after.loc[SQUARE.key]
    assert sorted(untouched["time_ms"].dropna()) == [1.0, 1.3, 1.5]
    assert not math.isfinite(untouched.loc["triton:mm:BM256", "time_ms"])

    summary = retime_summary(collector, retimed)
    assert summary["best_changed"] == {}  # decompose-k stays the fastest label
    assert summary["rows_failed"] == {"wrong_result": 1}
    assert summary["ratio_retimed_over_collector"]["triton:mm"]["rows"] == 1
    no_dk = collector[collector["template"] != "decompose_k"]
    # without it, Inductor's persistent-TMA kernel (0.95) overtakes the collector's fastest mm (0.80 -> 1.04)
    assert retime_summary(no_dk, retimed)["best_changed"] == {SKINNY.key: "triton:mm -> triton:persistent_tma"}


def test_result_rows_name_why_a_candidate_has_no_time(collector):
    wanted = [r for r in collector.to_dict("records") if r["problem_key"] == ODD.key]
    rows = result_rows(wanted, None, "kselect: the ranker scored none of the candidates", {"space": "retime"})
    assert {r["status"] for r in rows} == {"launch_error"}
    assert all("ranker scored none" in r["error"] for r in rows)
    assert all(r["model"] == "" and r["space"] == "retime" for r in rows)


# ----------------------------------------------------------------------------- CPU, end to end
torch = pytest.importorskip("torch")


def _stock_bmm_table(problem: Problem, tmp_path) -> dict[str, float]:
    """Stock max-autotune's own timings of the bmm's choices (ATen and CPP) on this CPU."""
    from kselect.kernels.operands import make_operands
    from kselect.selector.compat import autotune, choice_candidates

    seen: dict[str, float] = {}

    def saver(timings, name, input_nodes, choices, profiled_time_fn, precompile_times=None):
        for ch, ms in timings.items():
            seen[choice_candidates.caller_candidate(ch).key] = float(ms)

    remove = autotune.add_feedback_saver(saver)
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(
            max_autotune=True, force_disable_caches=True, max_autotune_gemm_backends="ATEN,CPP"
        ):
            ops = make_operands(problem, "cpu", seed=1)
            torch.compile(lambda a, b: a @ b)(ops.a, ops.b)
    finally:
        remove()
        torch._dynamo.reset()
    return seen


def _cpu_dataset(problems, data) -> str:
    """A collector dataset for CPU bmm `problems` whose labels claim the CPP kernel 2x faster
    than ATen (whatever it really is); returns the CPP template family to re-time."""
    ds = DatasetDir(data)
    ds.write_fingerprint({"fingerprint_id": "cpu-test", "gpu_name": "cpu"})
    families = set()
    for i, problem in enumerate(problems):
        table = _stock_bmm_table(problem, data)
        cpp = sorted(k for k in table if k.startswith("cpp:"))
        assert "aten:bmm" in table and cpp, table
        rows = [row_for(problem, Candidate.make("aten", "bmm"), time_ms=1.0, method="cpu_wall")]
        # the first problem claims the larger Triton gain, so it is planned (and timed) first
        rows += [
            row_for(problem, Candidate.make(*k.split(":", 1)), time_ms=0.5 + 0.1 * i, method="cpu_wall") for k in cpp
        ]
        ds.append(rows, f"test{i}")
        families |= {k for k in cpp}
    assert len(families) == 1, families  # CPP keys carry no knobs: the key is the family
    return families.pop()


@pytest.mark.slow
def test_retime_cpu_end_to_end_feeds_the_labels(tmp_path, monkeypatch, capsys):
    from kselect.training.cli.main import main
    from kselect.training.learn.held_out import load_data

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    problem = Problem(64, 80, 96, "fp32", "nn", "bmm", 4)
    data = tmp_path / "data"
    template = _cpu_dataset([problem], data)
    cpp = [template]
    argv = ["retime", "--data", str(data), "--device", "cpu", "--templates", template, "--top", "1"]
    assert main(argv) == 0
    out = load_dataset(data / "retimed")
    assert set(out["candidate_key"]) == {"aten:bmm", cpp[0]}, out[["candidate_key", "status", "error"]]
    assert (out["status"] == "ok").all(), out[["candidate_key", "status", "error"]].to_dict("records")
    assert (out["time_ms"] > 0).all() and set(out["method"]) == {"cpu_wall"} and (out["space"] == "retime").all()
    assert set(out["problem_key"]) == {problem.key} and (out["compile_s"] > 0).all()

    assert main(argv) == 0  # a rerun skips the finished shape
    assert len(load_dataset(data / "retimed")) == 2

    labels, fp = load_data(data)
    assert fp["fingerprint_id"] == "cpu-test"
    got = labels.set_index("candidate_key")["time_ms"].to_dict()
    timed = out.set_index("candidate_key")["time_ms"].to_dict()
    assert got["aten:bmm"] == timed["aten:bmm"] and got[cpp[0]] == timed[cpp[0]]
    from kselect.training.learn.model_card import labels_description

    assert labels_description(data).startswith("collector times, with 2 rows of 1 shapes re-timed")
    assert labels_description(tmp_path / "nowhere") == "collector times"
    raw, _ = load_data(data, retimed=False)
    assert raw.set_index("candidate_key")["time_ms"].to_dict()["aten:bmm"] == 1.0
    from kselect.training.data.dataset import summarize

    assert summarize(data)["retimed"] == {
        "path": str(data / "retimed"),
        "shapes": 1,
        "rows": 2,
        "ok_rows": 2,
        "shapes_with_ok_rows": 1,
    }
    capsys.readouterr()
    assert main(["retime", "--data", str(data), "--summary"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shapes"] == 1 and summary["rows_retimed_ok"] == 2


@pytest.mark.slow
def test_a_crashed_retime_worker_restarts_past_its_shape(tmp_path, monkeypatch, capsys):
    """The worker dies (exit 137) on its first shape: that shape's rows say so, the restarted
    worker re-times the second, and the result counts the crash."""
    from kselect.training.cli.main import main

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    first, second = Problem(64, 80, 96, "fp32", "nn", "bmm", 4), Problem(32, 48, 64, "fp32", "nn", "bmm", 2)
    data = tmp_path / "data"
    template = _cpu_dataset([first, second], data)
    monkeypatch.setenv("KSELECT_COLLECT_FAULT", f"1:{tmp_path / 'fired'}")
    capsys.readouterr()
    assert main(["retime", "--data", str(data), "--device", "cpu", "--templates", template, "--top", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (tmp_path / "fired").exists() and result["crashes"] == 1 and result["shapes_done"] == 2, result
    out = load_dataset(data / "retimed").set_index(["problem_key", "candidate_key"])
    died, timed = out.loc[first.key], out.loc[second.key]
    assert len(died) == 2 and (died["status"] == "launch_error").all()
    assert died["error"].str.contains("worker died with exit code 137").all()
    assert (timed["status"] == "ok").all() and (timed["time_ms"] > 0).all()
    assert not (data / "retimed" / "inflight" / "retime-s0of1gcpu.plan.json").exists()
