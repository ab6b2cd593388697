"""fp8 `_scaled_mm`'s Triton space equals Inductor's own scaled heuristics (after their filters,
clamping and dedup), run on this CPU under a real GraphLowering: the scaled mm template's
(`triton::mm` with the scale epilogue) and the device-TMA epilogue-scaling template's."""

import pytest
import torch
from torch._inductor import config as ic
from torch._inductor.graph import GraphLowering
from torch._inductor.template_heuristics.triton import (
    CUDAScaledMMTemplateConfigHeuristic,
    CUDAScaledTMAEpilogueScalingTemplateConfigHeuristic,
)
from torch._inductor.virtualized import V

from kselect.kernels import Candidate, Problem
from kselect.kernels.problem import ProblemError
from kselect.kernels.triton.space import scaled_tma_compatible, template_space, tile_space, triton_space

# decode, prefill, awkward sizes and the K edges of each template's rules
SHAPES = [(1, 6144, 4096), (16, 4096, 14336), (64, 28672, 8192), (333, 1024, 4096), (8192, 4096, 4096), (48, 80, 48)]
HEURISTICS = {
    "scaled_mm": CUDAScaledMMTemplateConfigHeuristic,
    "scaled_persistent_tma": CUDAScaledTMAEpilogueScalingTemplateConfigHeuristic,
}


def _inductor(m, n, k, template, space):
    """Inductor's configs for one scaled template, as our candidates."""
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with V.set_graph_handler(GraphLowering(gm)), ic.patch({"max_autotune_gemm_search_space": space}):
        h = HEURISTICS[template]()
        gen = h.get_exhaustive_mm_configs() if space == "EXHAUSTIVE" else h.get_mm_configs()
        return [
            Candidate.make(
                "triton",
                template,
                BLOCK_M=c.kwargs["BLOCK_M"],
                BLOCK_N=c.kwargs["BLOCK_N"],
                BLOCK_K=c.kwargs["BLOCK_K"],
                GROUP_M=c.kwargs.get("GROUP_M", 8),
                num_stages=c.num_stages,
                num_warps=c.num_warps,
            )
            for c in gen(m, n, k, dtype_size=1)
        ]


def _fp8(m, n, k, scaling="rowwise"):
    return Problem(m, n, k, "fp8e4m3", "nt", "scaled_mm", scaling=scaling)


@pytest.mark.parametrize("space", ["EXHAUSTIVE", "DEFAULT"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_scaled_tile_space_equals_inductor(shape, space):
    for template in HEURISTICS:
        ours = tile_space(_fp8(*shape), template, space.lower())
        assert ours == _inductor(*shape, template, space)  # same members, same order
        assert ours  # catches a list read as empty on both sides


def test_which_scaled_templates_apply():
    """tuned_scaled_mm's rules: TMA needs K % 16 == 0 and K >= 32 (1-byte operands); the scaled mm
    template needs K > 16; both scalings get the same templates; no decompose-k however long K."""
    big = triton_space(_fp8(16, 4096, 4096), "default")
    assert {c.template for c in big} == {"scaled_persistent_tma", "scaled_mm"}
    assert big[0].template == "scaled_persistent_tma"  # Inductor's order: TMA template first
    assert triton_space(_fp8(16, 4096, 4096, "tensorwise"), "default") == big
    assert not scaled_tma_compatible(_fp8(64, 64, 16)) and scaled_tma_compatible(_fp8(64, 64, 32))
    assert scaled_tma_compatible(_fp8(64, 64, 4096 + 16))
    assert template_space(_fp8(64, 64, 16), "scaled_mm", "default") == ()
    assert triton_space(_fp8(64, 64, 16), "default") == []  # K = 16: neither template applies
    assert {c.template for c in triton_space(_fp8(16, 16, 65536), "exhaustive")} == {
        "scaled_persistent_tma",
        "scaled_mm",
    }
    assert all(c.get("BLOCK_K") >= 32 or c.template == "scaled_mm" for c in big)


@pytest.mark.parametrize("n, k", [(4104, 1040), (4096, 24)])
def test_scaled_problem_needs_k_and_n_divisible_by_16(n, k):
    """torch's own _scaled_mm check (meta and cuBLASLt): such a GEMM never reaches Inductor."""
    with pytest.raises(ProblemError, match="divisible by 16"):
        _fp8(64, n, k)
