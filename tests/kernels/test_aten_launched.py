"""ATen's launched kernels as numbers: cuBLAS kernel names parsed into the cost model's columns,
and the probe's refusals where it cannot read them (GPU reading in test_gpu_selector)."""

import json
from pathlib import Path

import pytest
import torch

from kselect.kernels.aten.launched import (
    ATEN_KERNEL_COLUMNS,
    ProbeError,
    kernel_facts,
    probe,
    probe_possible,
    record_facts,
)
from kselect.kernels.problem import Problem

# names an H100 (cuBLAS of torch 2.11+cu130) launched (reports/2026-12-05-cublas-kernels/kernels.jsonl)
NVJET = "nvjet_sm90_tst_128x144_64x6_2x1_v_bz_TNT"
SPLIT_K = "nvjet_sm90_tst_128x16_64x11_4x1_v_bz_splitK_TNT"
REDUCE = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, __nv_bfloat16>(...)"
CUTLASS = "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(...)"


def test_nvjet_name_gives_tile_pipeline_and_grid():
    f = kernel_facts([NVJET], 1, 1000, 2304, 768)
    assert tuple(f) == ATEN_KERNEL_COLUMNS
    assert (f["aten_tile_a"], f["aten_tile_b"], f["aten_tile_k"], f["aten_stages"]) == (128, 144, 64, 6)
    assert (f["aten_cluster_a"], f["aten_cluster_b"], f["aten_nvjet"], f["aten_split_k"]) == (2, 1, 1, 0)
    # 2304 / 128 x ceil(1000 / 144) CTAs; K = 768 is 12 k-steps of 64 over 6 stages
    assert f["aten_ctas_log2"] == pytest.approx(__import__("math").log2(18 * 7))
    assert f["aten_k_iters_over_stages"] == 2.0


def test_split_k_with_reduction_and_memset():
    f = kernel_facts([SPLIT_K, REDUCE], 2, 16, 4096, 4096)
    assert f["aten_split_k"] == 1 and f["aten_kernels_per_call"] == 2 and f["aten_memset"] == 0
    g = kernel_facts(["Memset (Device)", NVJET], 2, 64, 4096, 4096)
    assert g["aten_memset"] == 1 and g["aten_tile_a"] == 128  # the GEMM kernel, not the memset, is read


def test_unparsed_kernel_keeps_zero_tiles():
    f = kernel_facts([CUTLASS], 1, 1000, 50257, 768)
    assert f["aten_nvjet"] == 0 and f["aten_tile_a"] == 0 and f["aten_ctas_log2"] == 0
    with pytest.raises(ValueError, match="no kernel names"):
        kernel_facts([], 1, 1, 1, 1)


def test_record_facts_reads_one_call_of_a_probe_record():
    rec = {"kernels": [SPLIT_K, REDUCE] * 3, "per_call": 2.0}
    assert record_facts(rec, Problem(16, 4096, 4096)) == kernel_facts([SPLIT_K, REDUCE], 2, 16, 4096, 4096)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_probe_refuses_without_cuda():
    assert "CUDA" in probe_possible()
    with pytest.raises(ProbeError, match="CUDA"):
        probe(Problem(64, 64, 64))


@pytest.mark.gpu
def test_probe_reads_cublas_kernels_on_the_gpu():
    if probe_possible():
        pytest.skip(probe_possible())
    p = Problem(4, 16, 256)
    rec = probe(p)
    assert rec["per_call"] >= 1 and len(rec["kernels"]) == round(3 * rec["per_call"])
    facts = record_facts(rec, p)
    assert tuple(facts) == ATEN_KERNEL_COLUMNS and facts["aten_kernels_per_call"] == rec["per_call"]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with pytest.raises(ProbeError, match="profiler"):
            probe(p)  # never inside the user's own profiler


def test_operand_bytes_counts_every_operand():
    from kselect.kernels.aten.launched import operand_bytes

    # Llama-3's lm_head at 8192 tokens: A 8192x4096, B 4096x128256, out 8192x128256, bias
    assert operand_bytes(Problem(8192, 128256, 4096)) == 2 * (8192 * 4096 + 4096 * 128256 + 8192 * 128256 + 128256)
    assert operand_bytes(Problem(8, 16, 32, op="bmm", batch=3)) == 2 * (3 * (8 * 32 + 32 * 16 + 8 * 16) + 16)


@pytest.mark.gpu
def test_graph_and_profiler_readers_agree():
    if probe_possible():
        pytest.skip(probe_possible())
    for p in (Problem(2, 3072, 3072), Problem(512, 4608, 3584), Problem(8, 4096, 4096, op="addmm")):
        graph, prof = probe(p, reader="graph"), probe(p, reader="profiler")
        assert graph["reader"] == "graph" and prof["reader"] == "profiler"
        assert record_facts(graph, p) == record_facts(prof, p), (graph["kernels"], prof["kernels"])


def test_an_unknown_reader_is_named():
    with pytest.raises(ValueError, match="reader 'nsys'"):
        probe(Problem(64, 64, 64), reader="nsys")


# an H100's probes of the unseen set, read both ways (reports/2026-12-06-aten-probe-cupti)
PROBE_CALL = Path(__file__).parents[2] / "reports/2026-12-06-aten-probe-cupti/call-b2/facts"


def test_a_real_graph_dump_names_the_kernels_the_profiler_saw():
    from kselect.kernels.aten.launched import dot_launches

    rows = [json.loads(line) for line in open(PROBE_CALL / "rows.jsonl")]
    dumped = dot_launches((PROBE_CALL / "dump-0.dot").read_text())
    assert dumped == rows[0]["profiler"]["kernels"] == ["nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"] * 3


def test_mangled_split_k_names_and_memsets_give_the_profilers_facts():
    rows = [json.loads(line) for line in open(PROBE_CALL / "rows.jsonl")]
    split = [r for r in rows if any(n.startswith("_ZN8cublasLt19splitKreduce") for n in r["graph"]["kernels"])]
    assert split, "the committed probe run has split-K problems"
    for r in split:
        op, dims, dtype, layout = r["problem"].split(":")  # e.g. mm:2x3584x18944:bf16:nt
        M, N, K = (int(d) for d in dims.split("x"))
        p = Problem(M, N, K, dtype, layout, op=op)
        assert r["graph"]["kernels"] != r["profiler"]["kernels"]  # mangled against demangled
        assert record_facts(r["graph"], p) == record_facts(r["profiler"], p) == r["profiler_facts"]
        assert r["profiler_facts"]["aten_split_k"] == 1
