"""On a GPU: the two ways to let a decision see a GEMM's fused epilogue, on three bf16 GEMM +
epilogue functions of a Llama-3-8B layer -- kselect handing Inductor its few (one compile,
Inductor's epilogue-fusion benchmark picks) against the same few compiled and timed one by one
(training/measure/epilogue_labels.py: kselect timing the fused forms itself). Each side's wall
seconds to its pick and the pick's step time are written as JSON to $KSELECT_EPILOGUE_OUT (a
directory) when set; reports/device/plan.md holds the rule that reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpu_model import served_model  # noqa: E402

from kselect.training.measure.epilogue_ways import handover_vs_pinned  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def decode_relu_mul(x, w, r):  # a decode GEMM feeding an activation and a product
    return torch.relu(x @ w.t()) * r


def prefill_gelu(x, w, b):  # the bias goes into addmm; GELU is the epilogue
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b))


def decode_swiglu(x, wg, wu):  # SwiGLU: each GEMM's epilogue reads the other's output
    return torch.nn.functional.silu(x @ wg.t()) * (x @ wu.t())


def _bf16(g, *shape):
    return (torch.randn(*shape, generator=g, device="cuda") * shape[-1] ** -0.5).to(torch.bfloat16)


CASES = {
    "decode-relu-mul": (decode_relu_mul, lambda g: (_bf16(g, 8, 4096), _bf16(g, 4096, 4096), _bf16(g, 8, 4096))),
    "prefill-gelu": (prefill_gelu, lambda g: (_bf16(g, 2048, 4096), _bf16(g, 4096, 4096), _bf16(g, 4096))),
    "decode-swiglu": (decode_swiglu, lambda g: (_bf16(g, 8, 4096), _bf16(g, 14336, 4096), _bf16(g, 14336, 4096))),
}


@pytest.fixture(scope="module")
def served():
    return served_model()


@pytest.mark.parametrize("name", list(CASES))
def test_handover_and_pinned_timing_reach_a_pick(served, name, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    fn, make = CASES[name]
    args = make(torch.Generator(device="cuda").manual_seed(0))
    got = handover_vs_pinned(fn, args, "cuda", repeats=100, k=2)
    out = os.environ.get("KSELECT_EPILOGUE_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{name}.json").write_text(json.dumps(got, indent=1, default=str))
    few = got["few"]
    assert got["epilogue"].get("fusable"), got["epilogue"]
    assert got["handover"]["step_ms"] > 0 and got["pinned"]["step_ms"] > 0
    assert got["handover"]["gpu_ms"] > 0 and got["pinned"]["gpu_ms"] > 0, got  # the GPU time alone too
    if len(few) == 1:
        # the card's reach budget timed no template (decide/policy.py's with_fusing_few): ATen
        # alone, its epilogue unfused, nothing handed to Inductor's fusion benchmark
        assert few[0].startswith("aten:") and "no template within reach" in got["why"], got
        assert got["handover"]["recompile_measured"] == 0 and got["pinned"]["pick"] == few[0], got
        return
    assert len(few) >= 2 and any(k.startswith("aten:") for k in few), got
    assert got["handover"]["picks"], "Inductor's pick was not cached"
    assert got["pinned"]["pick"] in few, got["pinned"]
