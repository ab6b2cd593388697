"""A GEMM with its epilogue (kernels/epilogue.py): which choices fuse one, the
epilogue's few the option hands Inductor, the epilogue description of each GEMM of an aten
graph (read during a real lowering: test_epilogue_cpu.py), and its optional feature block."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.epilogue import fuses_epilogue  # noqa: E402
from kselect.selector.compat import current_graph  # noqa: E402
from kselect.selector.decide.policy import choose_kept, with_fusing_few  # noqa: E402

ATEN = Candidate.make("aten", "mm")
MM = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
TMA = Candidate.make(
    "triton", "persistent_tma", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8
)
DK = Candidate.make("triton", "decompose_k", k_split=4)
CPP = Candidate.make("cpp", "cpp_CppMicroGemmFP32Vec")


def test_tile_storing_templates_fuse_an_epilogue():
    assert fuses_epilogue(MM) and fuses_epilogue(TMA) and fuses_epilogue(CPP)
    assert not fuses_epilogue(ATEN) and not fuses_epilogue(DK) and not fuses_epilogue(None)


def test_verify_keeps_the_best_fusing_template_when_the_gemm_feeds_pointwise_ops():
    cands = [ATEN, DK, MM, TMA]
    scores = np.array([0.0, 5.0, 9.0, 7.0])  # ATen far ahead: adaptive k keeps it alone
    kept, why = choose_kept(cands, scores, "verify", 4, True, False)
    assert kept == [0]
    kept, why = choose_kept(cands, scores, "verify", 4, True, False, fusion_candidate=True)
    assert kept == [0, 3] and "epilogue" in why  # TMA outranks mm; decompose-k cannot fuse
    assert choose_kept(cands, scores, "predict", 4, True, False, fusion_candidate=True)[0] == [0]


def test_the_epilogues_few_adds_a_fusing_template_and_aten_to_any_kept_set():
    cands = [ATEN, DK, MM, TMA, Candidate.make("aten", "addmm")]
    scores = np.array([0.5, 0.0, 9.0, 7.0, 0.1])
    # predict's ATen pick gains the best-scored fusing template (TMA, not the NaN-free mm)
    kept, why = with_fusing_few(cands, scores, [0], "predict: ATen", keep_aten=True)
    assert kept == [0, 3] and "fusion benchmark" in why
    # a decompose-k pick gains TMA and the best-scored ATen (addmm, 0.1 < 0.5)
    assert with_fusing_few(cands, scores, [1], "w", keep_aten=True)[0] == [1, 3, 4]
    assert with_fusing_few(cands, scores, [1], "w", keep_aten=False)[0] == [1, 3]
    # both present already: unchanged, reason too; a broken (NaN) template is never added
    assert with_fusing_few(cands, scores, [2, 0], "w", keep_aten=True) == ([2, 0], "w")
    assert with_fusing_few(cands, np.array([0.5, 0.0, 9.0, np.nan, 0.1]), [0], "w", True)[0] == [0, 2]
    # nothing that can fuse: nothing to add
    assert with_fusing_few([ATEN, DK], np.array([0.0, 1.0]), [0], "w", True) == ([0], "w")


def test_no_template_within_verifys_reach_leaves_the_epilogue_unfused():
    """verify with the shipped H200 model (its reach model beside it) on a prefill bias + GELU
    (addmm 2048x4096x4096): the reach budget times no template, and the epilogue's few stays ATen
    alone, both ways an epilogue is picked; on a decode GEMM within reach it gains its fusing
    few as before. Predict reads no reach budget: its ATen pick still gains the few."""
    from kselect.kernels.problem import Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.models import shipped_model_path
    from kselect.selector.inductor.hook import Selector

    meta = json.loads(shipped_model_path("h200-bf16.meta.json").read_text())
    fingerprint = {**meta["fingerprint"], "device_type": "cuda"}

    def kept(mode, problem, epilogue, **settings):
        cands = [Candidate.make("aten", "addmm")] + triton_space(problem, "exhaustive")
        sel = Selector(mode, **settings)
        got = sel.select("templates", problem, {}, fingerprint, cands, epilogue=epilogue)
        (decision,) = sel.decisions
        return [cands[i] for i in got.kept], decision["why"]

    prefill = Problem(2048, 4096, 4096, "bf16", "nt", op="addmm")
    for epilogue, settings in (("fused", {"time_fused": True}), (True, {"epilogue_fusion": True})):
        few, why = kept("verify", prefill, epilogue, **settings)
        assert [c.key for c in few] == ["aten:addmm"], why
        assert "no template within reach" in why and "stays unfused" in why
    few, why = kept("predict", prefill, True, epilogue_fusion=True)
    assert any(fuses_epilogue(c) for c in few) and "fusion benchmark" in why
    decode = Problem(8, 4096, 4096, "bf16", "nt", op="addmm")
    few, why = kept("verify", decode, "fused", time_fused=True)
    assert any(fuses_epilogue(c) for c in few) and "stays unfused" not in why, why


class _Epilogues(torch.nn.Module):
    """Four bmms, each with another epilogue."""

    def forward(self, a, b, c, d, bias, r, e):
        gated = torch.bmm(a, c)
        sliced = torch.bmm(a, d)
        normed = torch.bmm(a, e)
        return (
            torch.relu(torch.bmm(a, b).reshape(4, 64 * 80)) * 2.0,  # through a view: fusable
            torch.nn.functional.silu(gated) * r + bias,  # SwiGLU-like product, a bias; the output escapes
            gated,
            sliced[..., :16] * sliced[..., 16:],  # needs other elements (chunked SwiGLU): not fusable
            normed * normed.sum(-1, keepdim=True),  # reads a reduction of its own output: not fusable
        )


def _bmm_nodes(fn, args) -> dict:
    """{"MxN": FX node} of the bmms in fn's aten graph, traced with fake tensors (each node's
    meta["val"] holds its output's shape and dtype, as in the graph Inductor lowers)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn, tracing_mode="fake")(*args).graph
    return {
        "x".join(map(str, n.meta["val"].shape[-2:])): n
        for n in graph.nodes
        if n.op == "call_function" and n.target is torch.ops.aten.bmm.default
    }


def _operands():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(4, 64, 96, generator=g),
        torch.randn(4, 96, 80, generator=g),
        torch.randn(4, 96, 48, generator=g),
        torch.randn(4, 96, 32, generator=g),
        torch.randn(48, generator=g),
        torch.randn(4, 64, 48, generator=g),
        torch.randn(4, 96, 16, generator=g),
    )


def test_epilogue_description_of_each_gemm():
    nodes = _bmm_nodes(_Epilogues(), _operands())
    relu, gate, sliced, normed = (current_graph.describe_epilogue(nodes[f"64x{n}"]) for n in (80, 48, 32, 16))
    out = 4 * 64 * 80 * 4  # the first bmm's output, fp32 bytes
    assert relu.ops == ("relu", "mul") and relu.fusable and not relu.gemm_output_escapes
    assert relu.kind_count("activation") == 1 and relu.kind_count("arith") == 1
    assert (relu.extra_inputs, relu.extra_bytes, relu.out_bytes, relu.gemm_out_bytes) == (0, 0, out, out)
    gated = 4 * 64 * 48 * 4
    assert gate.fusable and gate.gemm_output_escapes  # `gated` is returned too: written anyway
    assert gate.kind_count("mul_tensor") == 1 and gate.kind_count("add_tensor") == 1, gate
    assert gate.extra_inputs == 2 and gate.extra_bytes == gated + 48 * 4  # r and the bias
    assert gate.out_bytes == gated and gate.gemm_out_bytes == gated
    assert not sliced.fusable and sliced.ops == () and sliced.gemm_output_escapes
    assert not normed.fusable and normed.ops == (), normed
    with pytest.raises(ValueError, match="unknown epilogue op kind"):
        gate.kind_count("gelu")


H200_LIKE = {"gpu_name": "test", "sm_count": 132, "peak_tflops": {"bf16": 989.0}, "mem_bandwidth_gbs": 4800.0}


def test_the_epilogue_feature_block_is_optional_and_describes_the_epilogue():
    from kselect.kernels.epilogue import Epilogue
    from kselect.kernels.problem import Problem
    from kselect.selector.model import feature_blocks as B
    from kselect.selector.model import features as F

    # no block named: exactly the schema every served model was trained on, same version
    assert B.feature_names() == F.FEATURE_NAMES and F.FEATURE_SCHEMA_VERSION == 2
    names = B.feature_names(["epilogue"])
    assert names[: len(F.FEATURE_NAMES)] == F.FEATURE_NAMES and len(names) == len(F.FEATURE_NAMES) + 15
    with pytest.raises(F.FeatureError, match="unknown feature block"):
        B.feature_names(["prologue"])
    cands = [ATEN, MM, DK]
    base = F.featurize_candidates(Problem(8, 4096, 4096, "bf16"), cands, H200_LIKE)
    assert base.shape == (3, len(F.FEATURE_NAMES))
    out = 8 * 4096 * 2
    gelu_bias = Epilogue(
        ops=("add", "mul", "erf", "add", "mul", "mul"),
        kinds=(("activation", 1), ("add_tensor", 1), ("arith", 4)),
        extra_inputs=1,
        extra_bytes=4096 * 2,
        out_bytes=out,
        gemm_out_bytes=out,
        fusable=True,
    )
    block = B.epilogue_block(gelu_bias, cands, H200_LIKE)
    col = {name: block[:, i] for i, name in enumerate(B.EPILOGUE_FEATURE_NAMES)}
    assert block.shape == (3, 15)
    assert list(col["cand_fuses_epilogue"]) == [0.0, 1.0, 0.0]  # ATen and decompose-k cannot fuse it
    assert col["epi_n_ops"][0] == 6 and col["epi_ops_arith"][0] == 4 and col["epi_ops_add_tensor"][0] == 1
    assert col["log2_epi_extra_bytes"][0] == pytest.approx(np.log2(1 + 8192))
    # as its own kernel the epilogue moves the GEMM's output twice more than fused
    fused, separate = 10 ** col["log10_t_epi_fused_ms"][0], 10 ** col["log10_t_epi_separate_ms"][0]
    assert separate - fused == pytest.approx(2 * out / 4.8e12 * 1e3)
    none = B.epilogue_block(None, cands, H200_LIKE)
    assert not none[:, :-3].any() and (none[:, -3:-1] == -6.0).all() and not none[:, -1].any()
    symbolic = B.epilogue_block(
        Epilogue(ops=("relu",), out_bytes=None, gemm_out_bytes=None, fusable=True), cands, H200_LIKE
    )
    assert np.isnan(symbolic[0, B.EPILOGUE_FEATURE_NAMES.index("log2_epi_out_bytes")])


class _Caller:
    """A benchmarked choice as the boundary reads it: an extern call by its name."""

    def __init__(self, name):
        self.name = name

    def info_dict(self):
        return {"backend": "extern"}


class _CppCaller(_Caller):
    def info_dict(self):
        return {"backend": "CPP"}


def test_a_set_handed_to_the_fusion_benchmark_is_settled_by_the_schedulers_pick_only(tmp_path):
    """verify's bookkeeping for a multi-template buffer: Inductor's bare-GEMM timings (its
    feedback saver) settle nothing; the scheduler's pick is cached, and only once."""
    from kselect.kernels.problem import Problem
    from kselect.selector.decide.rankers import MeasuredRanker
    from kselect.selector.inductor.hook import Selector

    problem = Problem(64, 80, 96, "fp32", "nt")
    cands = [Candidate.make("aten", "mkl_linear"), CPP]
    table = {problem.key: {cands[0].key: 1.0, cands[1].key: 2.0}}
    sel = Selector("verify", ranker=MeasuredRanker(table), cache_dir=str(tmp_path), epilogue_fusion=True)
    fingerprint = {"fingerprint_id": "test"}
    kept, entry = sel.select("choices", problem, {"op": "mm"}, fingerprint, cands, epilogue=True)
    assert kept == [0, 1]  # ATen alone by the ranking; the epilogue's few adds the template
    choices = [_Caller("_mkl_linear"), _CppCaller("cpp_CppMicroGemmFP32Vec_0")]
    sel._await_verification("choices", problem.key, (*entry, False), choices, by_fusion=True)
    sel.record_verified(choices, {choices[0]: 1.0, choices[1]: 2.0}, "cuda")  # bare timings: ATen
    sel.cache.flush()
    assert sel.cache.get(entry[0]) == [cands[0].key, cands[1].key] and sel.stats["verified"] == 0
    sel.record_fusion_pick(choices, choices[1], "cuda")  # the template, fused, won the step
    sel.record_fusion_pick(choices, choices[0], "cuda")  # a later finalising call changes nothing
    sel.cache.flush()
    assert sel.cache.get(entry[0]) == [CPP.key] and sel.stats["verified"] == 1


def test_watching_the_schedulers_pick_wraps_inductors_finalising_methods_and_restores_them():
    from torch._inductor import ir
    from torch._inductor.scheduler import Scheduler

    from kselect.selector.compat import multi_template

    owners = ((ir.MultiTemplateBuffer, "finalize_as_triton_caller"), (Scheduler, "finalize_multi_template_buffers"))
    before = [getattr(o, n) for o, n in owners]
    remove = multi_template.watch_final_choices(lambda *a: None)
    try:
        assert all(getattr(o, n).__wrapped__ is getattr(b, "__wrapped__", b) for (o, n), b in zip(owners, before))
    finally:
        remove()
    assert [getattr(o, n) for o, n in owners] == before
    assert not multi_template.defers_to_fusion_benchmark([object(), object()], "cpu")
