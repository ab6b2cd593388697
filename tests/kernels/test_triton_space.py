"""Our Triton space equals Inductor's own generator (after clamping and dedup) for CUDA.

Inductor's config generator runs on a CPU under a real GraphLowering; the GPU check of the
whole template list (tests/kernels/test_gpu_space.py) ran on the H200 with torch 2.11.
"""

import pytest
import torch
from torch._inductor import config as ic
from torch._inductor.graph import GraphLowering
from torch._inductor.template_heuristics.triton import (
    CUDAMMTemplateConfigHeuristic,
    CUDAPersistentTMATemplateConfigHeuristic,
)
from torch._inductor.utils import get_k_splits
from torch._inductor.virtualized import V

from kselect.kernels import Candidate, Problem
from kselect.kernels.triton.space import (
    decompose_k_splits,
    tile_space,
    tma_compatible,
    triton_space,
    uses_decompose_k,
)

SHAPES = [
    (1, 152064, 5120),
    (7, 3584, 14336),
    (32, 4096, 4096),
    (333, 7168, 5120),
    (4096, 4096, 4096),
    (100, 3000, 1000),
    (16, 16, 16),
    (65, 129, 4097),
    (128, 128, 65536),
]


def _inductor(m, n, k, heuristic_cls, template, space):
    """Inductor's own configs as our candidates."""
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with V.set_graph_handler(GraphLowering(gm)), ic.patch({"max_autotune_gemm_search_space": space}):
        h = heuristic_cls()
        gen = h.get_exhaustive_mm_configs() if space == "EXHAUSTIVE" else h.get_mm_configs()
        out = []
        for c in gen(m, n, k, dtype_size=2):
            kw = c.kwargs
            out.append(
                Candidate.make(
                    "triton",
                    template,
                    BLOCK_M=kw["BLOCK_M"],
                    BLOCK_N=kw["BLOCK_N"],
                    BLOCK_K=kw["BLOCK_K"],
                    GROUP_M=kw.get("GROUP_M", 8),
                    num_stages=c.num_stages,
                    num_warps=c.num_warps,
                )
            )
        return out


@pytest.mark.parametrize("space", ["EXHAUSTIVE", "DEFAULT"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tile_space_equals_inductor(shape, space):
    p = Problem(*shape)
    for cls, template in (
        (CUDAMMTemplateConfigHeuristic, "mm"),
        (CUDAPersistentTMATemplateConfigHeuristic, "persistent_tma"),
    ):
        ours = tile_space(p, template, space.lower())
        theirs = _inductor(*shape, cls, template, space)
        assert ours == theirs  # same members, same order


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_decompose_k_splits_equal_inductor(shape):
    p = Problem(*shape)
    if not uses_decompose_k(p):
        return
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    for space in ("DEFAULT", "EXHAUSTIVE"):
        with V.set_graph_handler(GraphLowering(gm)), ic.patch({"max_autotune_gemm_search_space": space}):
            theirs = [s for s in get_k_splits(*shape) if shape[2] % s == 0]
        assert decompose_k_splits(p, space.lower()) == theirs


def test_known_space_sizes_from_the_h200_notes():
    # ../shared/notes/h200-baselines.md: EXHAUSTIVE+TMA at 4096^3 builds 2,401 choices
    # (ATen + 2,400 Triton); EXHAUSTIVE without TMA at 32x4096x4096 has 551 (ATen + 550).
    assert len(triton_space(Problem(4096, 4096, 4096))) == 2400
    assert len(triton_space(Problem(32, 4096, 4096), templates=("mm", "decompose_k"))) == 550
    # DEFAULT at 128x128x65536: ATen + 9 decompose-k, no tile templates (K >= 64*M, 64*N).
    space = triton_space(Problem(128, 128, 65536), "default")
    assert {c.template for c in space} == {"decompose_k"} and len(space) == 9


def test_tma_needs_16_byte_aligned_rows_and_2d():
    assert tma_compatible(Problem(333, 7168, 5120))
    assert not tma_compatible(Problem(333, 7168, 5121))  # K*2 bytes not 16-aligned
    assert not tma_compatible(Problem(3, 7, 16, layout="tn"))  # A column-major: M*2 bytes
    assert not tma_compatible(Problem(8, 8, 8, op="bmm", batch=2))


def test_space_is_deterministic_and_unique():
    p = Problem(100, 3000, 1000)
    a, b = triton_space(p), triton_space(p)
    assert a == b and len(set(a)) == len(a)
