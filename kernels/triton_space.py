"""The Triton candidate space Inductor itself considers for one GEMM on CUDA.

The base config lists are read from Inductor (`CUDAConfigHeuristic`), so they follow the
installed torch; the per-problem steps are re-implemented here as plain integer
arithmetic so a space of ~2,400 candidates is built in milliseconds with no graph,
sympy or device in sight. Inductor's steps, in its order (torch 2.11/2.13,
`template_heuristics/triton.py`):

1. template filter: persistent TMA drops num_warps == 2;
2. scale: each block is clamped to next_power_of_2 of its dim (at least 16);
3. EXHAUSTIVE only: drop configs whose accumulator needs > 255 registers per thread;
4. finalize: num_warps = min(num_warps, BLOCK_M * BLOCK_N // 256), then dedup.

Which templates apply (`kernel/mm.py: tuned_mm`): decompose-k when K >= 32*M and
K >= 32*N; mm and persistent TMA only when NOT (K >= 64*M and K >= 64*N) -- in
EXHAUSTIVE too, because Inductor compares the search space to the lower-case
"exhaustive" there; persistent TMA only for 2-D operands with 16-byte aligned strides.
`tests/test_triton_space.py` checks this module against Inductor's own generator.
"""
from __future__ import annotations

import functools
import math

from .backend import SEARCH_SPACES, BackendError
from .candidate import Candidate
from .problem import Problem

TEMPLATES = ("mm", "persistent_tma", "decompose_k")
DECOMPOSE_K_THRESHOLD = 32
DECOMPOSE_K_MAX_SPLITS_DEFAULT = 10
TMA_ALIGNMENT_BYTES = 16


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


@functools.lru_cache(maxsize=None)
def inductor_base_configs(template: str, search_space: str) -> tuple[tuple[int, ...], ...]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps, GROUP_M) as Inductor lists them."""
    from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

    heur = CUDAConfigHeuristic()
    if search_space == "exhaustive":
        configs = heur.exhaustive_configs
    elif template == "persistent_tma":
        configs = heur.persistent_mm_configs
    else:
        configs = heur.mm_configs
    return tuple((c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps,
                  getattr(c, "group_m", None) or 8) for c in configs)


def _check_space(search_space: str) -> str:
    s = search_space.lower()
    if s not in SEARCH_SPACES:
        raise BackendError(f"unknown search space {search_space!r}: expected one of {SEARCH_SPACES}")
    return s


def tma_compatible(problem: Problem) -> bool:
    """Inductor's can_use_tma for our dense operands: 2-D, inner dims 16-byte aligned."""
    if problem.op == "bmm":
        return False
    b = problem.dtype_bytes
    a_inner = problem.M if problem.layout[0] == "t" else problem.K
    b_inner = problem.K if problem.layout[1] == "t" else problem.N
    return (a_inner * b) % TMA_ALIGNMENT_BYTES == 0 and (b_inner * b) % TMA_ALIGNMENT_BYTES == 0


def uses_decompose_k(problem: Problem, threshold_multiple: int = 1) -> bool:
    t = DECOMPOSE_K_THRESHOLD * threshold_multiple
    return problem.op == "mm" and problem.K >= t * problem.M and problem.K >= t * problem.N


def decompose_k_splits(problem: Problem, search_space: str) -> list[int]:
    """Inductor's get_k_splits: divisors of K giving >= 128-wide K parts, best kinds first."""
    m, n, k = problem.M, problem.N, problem.K
    max_split = min(k // m, k // n)
    pow2, mul32, rest = [], [], []
    for d in range(2, max_split + 1):
        if k % d:
            continue
        part = k // d
        if part < 128:
            continue
        if part & (part - 1) == 0:
            pow2.append(d)
        elif part % 32 == 0:
            mul32.append(d)
        else:
            rest.append(d)
    splits = pow2 + mul32 + rest
    if _check_space(search_space) == "default":
        splits = splits[:DECOMPOSE_K_MAX_SPLITS_DEFAULT]
    return splits


def tile_space(problem: Problem, template: str, search_space: str) -> list[Candidate]:
    """Steps 1-4 above for one tile template ('mm' or 'persistent_tma')."""
    space = _check_space(search_space)
    m_hint = max(next_power_of_2(problem.M), 16)
    n_hint = max(next_power_of_2(problem.N), 16)
    k_hint = max(next_power_of_2(problem.K), 16)
    seen: set[tuple] = set()
    out: list[Candidate] = []
    for bm, bn, bk, stages, warps, group_m in inductor_base_configs(template, space):
        if template == "persistent_tma" and warps == 2:
            continue
        bm, bn, bk = max(min(bm, m_hint), 16), max(min(bn, n_hint), 16), max(min(bk, k_hint), 16)
        if space == "exhaustive" and math.ceil(bm * bn / (warps * 32)) > 255:
            continue
        warps = min(warps, bm * bn // 256)
        key = (bm, bn, bk, stages, warps, group_m)
        if key in seen:
            continue
        seen.add(key)
        out.append(Candidate.make("triton", template, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                  num_stages=stages, num_warps=warps, GROUP_M=group_m))
    return out


def triton_space(problem: Problem, search_space: str = "exhaustive",
                 templates: tuple[str, ...] = TEMPLATES) -> list[Candidate]:
    """All Triton candidates Inductor would build for `problem`, template by template."""
    space = _check_space(search_space)
    out: list[Candidate] = []
    if "decompose_k" in templates and uses_decompose_k(problem):
        out += [Candidate.make("triton", "decompose_k", k_split=s)
                for s in decompose_k_splits(problem, space)]
    if not uses_decompose_k(problem, threshold_multiple=2):
        if "mm" in templates:
            out += tile_space(problem, "mm", space)
        if "persistent_tma" in templates and tma_compatible(problem):
            out += tile_space(problem, "persistent_tma", space)
    return out


def shared_memory_bytes(candidate: Candidate, dtype_bytes: int) -> int:
    """Inductor's upper-bound estimate of a tile config's shared memory (no epilogue)."""
    bm, bn, bk = candidate.get("BLOCK_M"), candidate.get("BLOCK_N"), candidate.get("BLOCK_K")
    if not bm:
        return 0
    return dtype_bytes * (bm * bk + bn * bk) * candidate.get("num_stages", 1) + 128
