"""The candidates Inductor considers for one grouped GEMM on CUDA (kernel/mm_grouped.py).

Inductor's `_tuned_grouped_mm_common` offers:
- ATen's `_grouped_mm` (extern choice `_grouped_mm`), when ATen is among the GEMM backends;
- the Triton template `grouped_mm` (a persistent kernel with TMA loads) on sm_90+ CUDA, no ROCm,
  a non-empty output, offsets exactly when an operand is 2-D: 4 x 3 x 3 x 2 x 2 = 144 base
  configs (BLOCK_M 16..128, BLOCK_N 64..256, BLOCK_K 64..256, stages 3/4, warps 4/8), pruned
  (`early_config_prune`) by the average rows per group and by shared memory;
- Blackwell-only CuteDSL and NVGEMM templates (not on Hopper; not modelled).
The list does not depend on the search space (DEFAULT and EXHAUSTIVE build the same choices).
The base list is read from the installed Inductor; the prune is re-implemented as arithmetic
and checked against Inductor's own (tests/kernels/test_grouped_space.py).
"""

from __future__ import annotations

import functools

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem

TEMPLATE = "grouped_mm"
ATEN = Candidate.make("aten", "grouped_mm")
H100_SMEM_OPTIN = 232_448  # bytes per block, sm_90 (what get_gpu_shared_memory reads there)


@functools.lru_cache(maxsize=None)
def inductor_grouped_configs() -> tuple[tuple[int, int, int, int, int], ...]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) in Inductor's order."""
    from torch._inductor.kernel.mm_grouped import grouped_mm_configs

    return tuple(
        (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_stages, c.num_warps)
        for c in grouped_mm_configs()
    )


def average_rows(problem: GroupedProblem) -> int:
    """The rows per group Inductor prunes by: M // G where A is 2-D and B 3-D, else M."""
    return problem.M // problem.G if problem.form == "2d3d" else problem.M


def block_m_allowed(block_m: int, m_avg: int) -> bool:
    """Inductor's row rule: few rows per group take small BLOCK_M, many rows large ones."""
    if m_avg <= 16:
        return block_m <= 32
    if m_avg <= 32:
        return block_m <= 64
    if m_avg <= 64:
        return block_m > 16
    return block_m > 32


def triton_grouped_space(problem: GroupedProblem, smem_limit: int = H100_SMEM_OPTIN) -> list[Candidate]:
    """The Triton `grouped_mm` choices Inductor builds for `problem`, in its order."""
    m_avg = average_rows(problem)
    out = []
    for bm, bn, bk, stages, warps in inductor_grouped_configs():
        if not block_m_allowed(bm, m_avg):
            continue
        if (bm + bn) * bk * stages * problem.dtype_bytes > smem_limit:
            continue
        out.append(
            Candidate.make("triton", TEMPLATE, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_stages=stages, num_warps=warps)
        )
    return out


def grouped_space(
    problem: GroupedProblem, smem_limit: int = H100_SMEM_OPTIN, backends: tuple[str, ...] = ("aten", "triton")
) -> list[Candidate]:
    """Every candidate Inductor offers for `problem` on an sm_90 card: ATen's first."""
    return ([ATEN] if "aten" in backends else []) + (
        triton_grouped_space(problem, smem_limit) if "triton" in backends else []
    )
