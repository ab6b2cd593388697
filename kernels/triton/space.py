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
`tests/kernels/test_triton_space.py` checks this module against Inductor's own generator.

fp8 `_scaled_mm` (`kernel/mm.py: tuned_scaled_mm`, tensorwise and rowwise scales) gets two
Triton templates, the same steps over other lists (`template_heuristics/triton.py`):
`scaled_mm` (`triton::mm` with the scale epilogue: `scaled_mm_configs`, base BLOCK_K >= 32, and
none where K <= 16) and `scaled_persistent_tma` (`scaled_mm_device_tma_epilogue_scaling`:
`scaled_persistent_mm_configs`, base BLOCK_K >= 32 and num_warps != 2, only where A and B are
TMA-compatible: K % 16 == 0 and K >= 32 for 1-byte operands); EXHAUSTIVE gives both the shared
exhaustive list under the same base filters. No decompose-k. tests/kernels/test_scaled_space.py
checks this against Inductor's scaled heuristics.
"""

from __future__ import annotations

import functools

import numpy as np

from kselect.kernels.backend import SEARCH_SPACES, BackendError
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem

TEMPLATES = ("mm", "persistent_tma", "decompose_k")
SCALED_TEMPLATES = ("scaled_persistent_tma", "scaled_mm")  # in tuned_scaled_mm's order
# template -> Inductor's DEFAULT config list (CUDAConfigHeuristic attribute)
_DEFAULT_LISTS = {
    "mm": "mm_configs",
    "persistent_tma": "persistent_mm_configs",
    "scaled_mm": "scaled_mm_configs",
    "scaled_persistent_tma": "scaled_persistent_mm_configs",
}
SCALED_MIN_K = 17  # the scaled mm template's `_valid`: none where K <= 16
FP8_TMA_MIN_INNER = 32  # can_use_tma: a 1-byte operand's inner dim is at least 32
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
    configs = heur.exhaustive_configs if search_space == "exhaustive" else getattr(heur, _DEFAULT_LISTS[template])
    if template in SCALED_TEMPLATES:  # the scaled heuristics' _filter_configs, before clamping
        configs = [c for c in configs if c.block_k >= 32]
        if template == "scaled_persistent_tma":
            configs = [c for c in configs if c.num_warps != 2]
    return tuple(
        (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, getattr(c, "group_m", None) or 8) for c in configs
    )


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


def scaled_tma_compatible(problem: Problem) -> bool:
    """can_use_tma for _scaled_mm's operands: A (M, K) and B stored (N, K), both K-contiguous
    fp8, so K bytes 16-aligned and K >= 32."""
    return problem.op == "scaled_mm" and problem.K % TMA_ALIGNMENT_BYTES == 0 and problem.K >= FP8_TMA_MIN_INNER


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
    return list(_size_class_tiles(problem, template, _check_space(search_space)))


def _size_class_tiles(problem: Problem, template: str, space: str) -> tuple[Candidate, ...]:
    """The memoised tuple of the problem's size class: one object for every GEMM of the class."""
    top_m, top_n, top_k = _largest_blocks(template, space)  # hints above these clamp nothing:
    return _tile_space(
        template,
        space,  # one memo entry for all larger GEMMs
        min(max(next_power_of_2(problem.M), 16), top_m),
        min(max(next_power_of_2(problem.N), 16), top_n),
        min(max(next_power_of_2(problem.K), 16), top_k),
    )


@functools.lru_cache(maxsize=4096)
def _tile_space(template: str, space: str, m_hint: int, n_hint: int, k_hint: int) -> tuple[Candidate, ...]:
    """The space depends on the problem only through the clamping hints: memoised on them, and
    vectorised over the ~2,400 base configs, so the selector's early decision
    (selector/compat/enumeration.py) enumerates a GEMM's space in well under a millisecond."""
    base = _base_array(template, space)
    bm = np.clip(base[:, 0], 16, m_hint)
    bn = np.clip(base[:, 1], 16, n_hint)
    bk = np.clip(base[:, 2], 16, k_hint)
    stages, warps, group_m = base[:, 3], base[:, 4], base[:, 5]
    keep = np.ones(len(base), dtype=bool)
    if template == "persistent_tma":
        keep &= warps != 2
    if space == "exhaustive":  # ceil(bm * bn / (warps * 32)) > 255, in integers
        keep &= -(-(bm * bn) // (warps * 32)) <= 255
    warps = np.minimum(warps, bm * bn // 256)
    rows = np.stack([bm, bn, bk, stages, warps, group_m], axis=1)[keep]
    if not len(rows):
        return ()
    packed = rows @ _PACK if rows.max() < 1024 else None  # one int per row: a 1-D unique is ~10x faster
    _, first = (
        np.unique(packed, return_index=True) if packed is not None else np.unique(rows, axis=0, return_index=True)
    )
    memo = _TILE_CANDIDATES
    out = []
    for key in map(tuple, rows[np.sort(first)].tolist()):
        cand = memo.get((template, key))
        if cand is None:
            m, n, k, st, w, g = key
            cand = memo[(template, key)] = Candidate.make(
                "triton", template, BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, num_stages=st, num_warps=w, GROUP_M=g
            )
        out.append(cand)
    return tuple(out)


_PACK = np.array([1 << 50, 1 << 40, 1 << 30, 1 << 20, 1 << 10, 1], dtype=np.int64)  # 10 bits per knob
_TILE_CANDIDATES: dict = {}  # (template, knob tuple) -> Candidate, shared by every hint triple


@functools.lru_cache(maxsize=None)
def _largest_blocks(template: str, space: str) -> tuple[int, int, int]:
    base = _base_array(template, space)
    return tuple(max(16, int(base[:, i].max())) if len(base) else 16 for i in range(3))


@functools.lru_cache(maxsize=None)
def _base_array(template: str, space: str) -> np.ndarray:
    return np.array(inductor_base_configs(template, space), dtype=np.int64).reshape(-1, 6)


def template_space(problem: Problem, template: str, search_space: str = "exhaustive") -> tuple[Candidate, ...]:
    """The Triton candidates of ONE template Inductor has chosen to try for `problem` (its
    lowering already applied the which-templates rules above, except TMA's alignment, which
    Inductor's heuristic checks itself): the selector's per-template enumeration. Memoised and
    immutable: GEMMs that share a size class (tiles) or sizes (decompose-k) get the same tuple,
    so what the selector derives from it is computed once (selector/selector/identity_memo.py)."""
    space = _check_space(search_space)
    if template == "decompose_k":
        return _decompose_k_space(problem.M, problem.N, problem.K, space)
    if template == "persistent_tma" and not tma_compatible(problem):
        return ()
    if template == "scaled_persistent_tma" and not scaled_tma_compatible(problem):
        return ()
    if template == "scaled_mm" and problem.K < SCALED_MIN_K:
        return ()
    if template in ("mm", "persistent_tma", *SCALED_TEMPLATES):
        return _size_class_tiles(problem, template, space)
    raise BackendError(f"no Triton space for template {template!r}: expected one of {TEMPLATES + SCALED_TEMPLATES}")


@functools.lru_cache(maxsize=256)
def _decompose_k_space(m: int, n: int, k: int, space: str) -> tuple[Candidate, ...]:
    return tuple(
        Candidate.make("triton", "decompose_k", k_split=s) for s in decompose_k_splits(Problem(m, n, k), space)
    )


def triton_space(
    problem: Problem, search_space: str = "exhaustive", templates: tuple[str, ...] = TEMPLATES
) -> list[Candidate]:
    """All Triton candidates Inductor would build for `problem`, template by template."""
    space = _check_space(search_space)
    if problem.op == "scaled_mm":
        return [c for t in SCALED_TEMPLATES for c in template_space(problem, t, space)]
    out: list[Candidate] = []
    if "decompose_k" in templates and uses_decompose_k(problem):
        out += template_space(problem, "decompose_k", space)
    if not uses_decompose_k(problem, threshold_multiple=2):
        for template in ("mm", "persistent_tma"):
            if template in templates:
                out += template_space(problem, template, space)
    return out


def shared_memory_bytes(candidate: Candidate, dtype_bytes: int) -> int:
    """Inductor's upper-bound estimate of a tile config's shared memory (no epilogue)."""
    bm, bn, bk = candidate.get("BLOCK_M"), candidate.get("BLOCK_N"), candidate.get("BLOCK_K")
    if not bm:
        return 0
    return dtype_bytes * (bm * bk + bn * bk) * candidate.get("num_stages", 1) + 128
