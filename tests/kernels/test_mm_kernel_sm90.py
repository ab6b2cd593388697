"""Static facts of our mm kernel's large tiles, compiled for sm_90 here (Triton lowers to PTX and
runs ptxas on the host; no GPU): the things that made them slower than Inductor's own kernels."""

import re

import pytest

pytest.importorskip("triton")

from kselect.kernels.backend import CandidateError  # noqa: E402
from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.kernels.triton.backend import MM_MAX_OPERAND_ELEMENTS, launch_plan  # noqa: E402
from kselect.kernels.triton.cross_compile import compile_ptx, ptxas_facts  # noqa: E402

H100_SMS = 132


def _mm(bm, bn, bk, stages, warps) -> Candidate:
    return Candidate.make(
        "triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_stages=stages, num_warps=warps
    )


def test_wide_eight_warp_tile_keeps_wgmma_asynchronous():
    """BM128-BN256-W8: wgmma issued back to back (not one wait per instruction), operands
    brought in by 16-byte cp.async, the epilogue stored 16 bytes at a time, nothing spilled."""
    problem = Problem(4096, 3584, 4096, "bf16", "nt")
    ptx = compile_ptx(launch_plan(_mm(128, 256, 64, 4, 8), problem, H100_SMS))
    facts = ptxas_facts(ptx)
    assert not facts["wgmma_serialised"], facts
    assert facts["spill_store_bytes"] == facts["spill_load_bytes"] == 0, facts
    assert "wgmma.mma_async" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global[^;]*, 0x10,", ptx)
    assert re.search(r"st\.global(?:\.\w+)*\.v4", ptx)


@pytest.mark.parametrize("m", [8, 16])
def test_wide_two_warp_tile_does_not_spill(m):
    """BM16-BN256-BK128-W2: 128x256 B elements per step over 64 threads; the loop's addressing
    must fit in registers next to the pipeline."""
    problem = Problem(m, 9216, 3072, "bf16", "nt")
    facts = ptxas_facts(compile_ptx(launch_plan(_mm(16, 256, 128, 3, 2), problem, H100_SMS)))
    assert facts["spill_store_bytes"] == facts["spill_load_bytes"] == 0, facts


def test_ptxas_facts_refuse_ptx_without_a_target():
    with pytest.raises(ValueError, match="target"):
        ptxas_facts(".version 8.0\n")


def test_operands_past_int32_indexing_are_refused_by_name():
    """The mm kernel indexes with int32 element offsets: a larger operand is a compile error
    of that candidate, not a wrong result."""
    fits = Problem(16, 4096, MM_MAX_OPERAND_ELEMENTS // 4096, "bf16", "nt")
    launch_plan(_mm(16, 32, 16, 2, 2), fits, H100_SMS)
    too_big = Problem(16, 4096, MM_MAX_OPERAND_ELEMENTS // 4096 + 1, "bf16", "nt")
    with pytest.raises(CandidateError, match="int32 indexing"):
        launch_plan(_mm(16, 32, 16, 2, 2), too_big, H100_SMS)
