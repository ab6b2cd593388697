"""On a GPU: verify picking an activation epilogue's GEMM on its fused forms (time_fused,
selector/verify/fused_forms.py) against the same few compiled pinned one by one and timed whole
(training/measure/epilogue_labels.py's time_pinned), on the two Llama-3-8B cases of
training/workloads/epilogues.py where pinning beat Inductor's own epilogue benchmark on the H100
(reports/2026-12-06-epilogue-handover-h100): decode ReLU x mul and prefill bias + GELU.

The rule: the fused path's pick steps within 2 % of the pinned path's fastest -- recompiled from
the cache (the pick alone) and as the deciding compile returned it -- in no more wall seconds
than the pinned compiles take; its fused readings were taken (the template's fused form
and the epilogue alone), its pick cached, and the recompile measures nothing. Each case's JSON
goes to $KSELECT_EPILOGUE_OUT (a directory) when set. The process is warmed first (one small
verify compile), so the seconds compare the decisions, not which side paid the process's set-up.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpu_model import served_model  # noqa: E402

from kselect.training.measure.epilogue_ways import kselect_vs_pinned, warm_process  # noqa: E402
from kselect.training.workloads.epilogues import epilogue_cases  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

CASES = ("relu-mul:8x4096x4096:bf16", "bias-gelu:2048x4096x4096:bf16")
STEP_TOLERANCE = 1.02


@pytest.fixture(scope="module")
def served():
    got = served_model()
    warm_process("cuda")  # the model's load and Triton's set-up paid before either side's seconds
    return got


@pytest.mark.parametrize("name", CASES)
def test_the_fused_pick_steps_as_the_pinned_one_in_less_time(served, name, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    case = {c.name: c for c in epilogue_cases("llama3-8b")}[name]
    got = kselect_vs_pinned(case.function, case.operands("cuda"), "cuda", way="fused", repeats=100, k=2)
    out = os.environ.get("KSELECT_EPILOGUE_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"fused-{case.kind}.json").write_text(json.dumps(got, indent=1, default=str))
    fused, pinned = got["fused"], got["pinned"]
    assert got["epilogue"].get("fusable") and dict(got["epilogue"]["kinds"]).get("activation"), got["epilogue"]
    assert len(got["few"]) >= 2 and any(k.startswith("aten:") for k in got["few"]), got["few"]
    readings = [m["fused_ms"] for m in fused["measurements"] if m.get("fused_ms")]
    assert readings and "epilogue" in readings[0] and len(readings[0]) >= 2, fused["measurements"]
    assert fused["picks"], "the fused pick was not cached"
    assert fused["recompile_measured"] == 0
    assert pinned["step_ms"], pinned["records"]
    # the pick (a recompile from the cache builds it alone, as a pinned compile does), then the
    # function the deciding compile itself returned (Inductor's multi-template buffer finalised)
    best = pinned["step_ms"]
    assert fused["recompiled_step_ms"] <= STEP_TOLERANCE * best, (fused["picks"], fused["recompiled_step_ms"], best)
    assert fused["step_ms"] <= STEP_TOLERANCE * best, (fused["picks"], fused["step_ms"], best, pinned["pick"])
    assert fused["seconds"] <= pinned["seconds"], (fused["seconds"], pinned["seconds"])
