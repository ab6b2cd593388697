"""Epilogue-aware verification (selector/inductor/epilogue.py): the pricing rule, the kept set, and the
FX-graph question it rests on, asked during a real CPU max-autotune compile."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.decide.policy import choose_kept  # noqa: E402
from kselect.selector.inductor.compat import autotune, current_graph, signatures  # noqa: E402
from kselect.selector.inductor.epilogue import EPILOGUE_KERNEL_MS, effective_ms, epilogue_saving_ms, fuses_epilogue  # noqa: E402

ATEN = Candidate.make("aten", "mm")
MM = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
TMA = Candidate.make(
    "triton", "persistent_tma", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8
)
DK = Candidate.make("triton", "decompose_k", k_split=4)


def test_only_tile_storing_templates_fuse_an_epilogue():
    assert fuses_epilogue(MM) and fuses_epilogue(TMA)
    assert not fuses_epilogue(ATEN) and not fuses_epilogue(DK) and not fuses_epilogue(None)


def test_saving_is_a_kernel_plus_the_output_round_trip():
    p = Problem(8192, 4096, 4096, "bf16")
    # 2 x 8192 x 4096 x 2 bytes = 134 MB through 4.8 TB/s = 0.028 ms, plus the kernel
    assert epilogue_saving_ms(p, 4800.0) == pytest.approx(EPILOGUE_KERNEL_MS + 0.027962, rel=1e-4)
    assert epilogue_saving_ms(Problem(8, 4096, 4096, "bf16"), 4800.0) == pytest.approx(EPILOGUE_KERNEL_MS, rel=1e-2)
    # batch counts, fp32 doubles the bytes, an unknown bandwidth prices traffic at 4.8 TB/s
    b = Problem(1024, 1024, 64, "fp32", op="bmm", batch=8)
    assert epilogue_saving_ms(b, None) == pytest.approx(EPILOGUE_KERNEL_MS + 2 * 8 * 1024 * 1024 * 4 / 4.8e12 * 1e3)


def test_effective_time_charges_only_choices_that_cannot_fuse():
    got = effective_ms([0.010, 0.0105, math.inf, 0.02], [ATEN, MM, TMA, DK], 0.003)
    assert got == pytest.approx([0.013, 0.0105, math.inf, 0.023])
    # the bare winner (ATen) loses once the epilogue it cannot absorb is priced in
    assert int(np.argmin(got)) == 1


def test_verify_keeps_the_best_fusing_template_when_the_gemm_feeds_pointwise_ops():
    cands = [ATEN, DK, MM, TMA]
    scores = np.array([0.0, 5.0, 9.0, 7.0])  # ATen far ahead: adaptive k keeps it alone
    kept, why = choose_kept(cands, scores, "verify", 4, True, False)
    assert kept == [0]
    kept, why = choose_kept(cands, scores, "verify", 4, True, False, fusion_candidate=True)
    assert kept == [0, 3] and "epilogue" in why  # TMA outranks mm; decompose-k cannot fuse
    # a fusing template already kept: nothing added; predict mode never adds one
    assert choose_kept(cands, np.array([1.0, 5.0, 0.0, 7.0]), "verify", 1, False, False, fusion_candidate=True)[0] == [
        2
    ]
    assert choose_kept(cands, scores, "predict", 4, True, False, fusion_candidate=True)[0] == [0]
    # no fusing template among the candidates: the set is what it was
    assert choose_kept([ATEN, DK], np.array([0.0, 5.0]), "verify", 4, True, False, fusion_candidate=True)[0] == [0]


class _ThreeBmms(torch.nn.Module):
    def forward(self, a, b, c, d):
        sliced = torch.bmm(a, d)
        return (
            torch.relu(torch.bmm(a, b).reshape(4, 64 * 80)) * 2.0,
            torch.bmm(a, c),
            sliced[..., :16] * sliced[..., 16:],
        )


def test_output_feeds_pointwise_reads_the_gemm_being_lowered(tmp_path, monkeypatch):
    """A real max-autotune compile on the CPU: the first bmm feeds relu through a reshape (fusible),
    the second is returned as is, the third feeds a mul of two of its own slices (a chunked
    SwiGLU: each output element needs another one, so no template can fuse it)."""
    monkeypatch.setenv("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    assert current_graph.output_feeds_pointwise() is False  # nothing is being lowered
    seen = {}

    def record(choices):
        seen[signatures.choices_signature(choices)[0].key] = current_graph.output_feeds_pointwise()
        return choices

    remove = autotune.add_preprocessing_fn(record)
    g = torch.Generator().manual_seed(0)
    args = (
        torch.randn(4, 64, 96, generator=g),
        torch.randn(4, 96, 80, generator=g),
        torch.randn(4, 96, 48, generator=g),
        torch.randn(4, 96, 32, generator=g),
    )
    try:
        torch._dynamo.reset()
        # ATEN alone: the hook reads the graph, not the choices, and no C++ template need be built
        stock = {"max_autotune": True, "force_disable_caches": True, "max_autotune_gemm_backends": "ATEN"}
        with torch._inductor.config.patch(**stock), torch.no_grad():
            got = torch.compile(_ThreeBmms())(*args)
    finally:
        remove()
        torch._dynamo.reset()
    for x, y in zip(got, _ThreeBmms()(*args)):
        torch.testing.assert_close(x, y)
    assert seen == {"bmm4x:64x80x96:fp32:nn": True, "bmm4x:64x48x96:fp32:nn": False, "bmm4x:64x32x96:fp32:nn": False}, (
        seen
    )
