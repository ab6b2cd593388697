"""Which FlyDSL GEMM configs can be valid for a problem on an arch, and why the others cannot.

Pure Python (no flydsl import), so candidate lists are cheap anywhere. The rules mirror what
`gemm_kernel.py` assumes: exact tiling without predication, whole 128-bit vector copies,
MFMA tiling per wave, and the per-arch LDS limit computed from the kernel's own allocation.
"""

from __future__ import annotations

import itertools

from ..backend import SEARCH_SPACES, BackendError
from ..candidate import Candidate
from ..op_names import ADDMM, MM
from ..problem import Problem
from .params import (
    ARCHS,
    DTYPES,
    KNOB_NAMES,
    LAYOUTS,
    LDS_LIMIT_BYTES,
    MAX_THREADS,
    MFMA_K,
    MFMA_MN,
    VEC_ELEMS,
    KernelParams,
    lds_bytes,
)

BACKEND = "flydsl"
TEMPLATE = "gemm"
CHOICE_NAME = "flydsl_gemm"  # Inductor's name for our choices: flydsl_gemm_mm, flydsl_gemm_addmm
OPS = (MM, ADDMM)  # the ops FlyDSL joins inside Inductor (a bias only as addmm's)
REGISTERS_PER_LANE = 512  # VGPR + AGPR file per lane on CDNA3/CDNA4

# Knob grids per search space, in the (deterministic) order candidates are listed.
GRIDS = {
    "default": dict(
        TILE_M=(64, 128, 256),
        TILE_N=(64, 128, 256),
        TILE_K=(32, 64),
        STAGES=(2,),
        WAVES=((2, 2),),
        SPLIT_K=(1, 2, 4),
        GROUP_M=(1, 8),
    ),
    "exhaustive": dict(
        TILE_M=(32, 64, 128, 256),
        TILE_N=(32, 64, 128, 256),
        TILE_K=(32, 64, 128),
        STAGES=(1, 2, 3),
        WAVES=((1, 1), (1, 2), (2, 1), (2, 2), (1, 4), (4, 1), (2, 4), (4, 2)),
        SPLIT_K=(1, 2, 4, 8),
        GROUP_M=(1, 4, 8),
    ),
}


def candidate(**knobs) -> Candidate:
    """The Candidate of one knob setting (all of KNOB_NAMES, as ints): the one key every
    producer uses -- the grid here, the dataset, and the selector reading Inductor's choices."""
    missing = [k for k in KNOB_NAMES if k not in knobs]
    if missing:
        raise BackendError(f"FlyDSL gemm knobs {missing} missing from {knobs}")
    return Candidate.make(BACKEND, TEMPLATE, **{k: int(knobs[k]) for k in KNOB_NAMES})


def check_arch(arch: str) -> str:
    if arch not in ARCHS:
        raise BackendError(f"unsupported FlyDSL arch {arch!r}: expected one of {ARCHS}")
    return arch


def kernel_params(candidate: Candidate, problem: Problem) -> KernelParams:
    """The kernel build for `candidate` on `problem` (a BackendError names a missing knob)."""
    kw = candidate.kwargs
    try:
        return KernelParams(M=problem.M, N=problem.N, K=problem.K, dtype=problem.dtype, layout=problem.layout, **kw)
    except TypeError as exc:
        raise BackendError(f"{candidate.key} is not a FlyDSL gemm candidate: {exc}") from None


def _copy_fits(rows: int, cols: int, threads: int) -> str:
    """Reason a (rows, cols) row-major tile cannot be moved by whole 128-bit lane vectors."""
    if cols % VEC_ELEMS:
        return f"tile row of {cols} elements is not a whole number of {VEC_ELEMS}-element vectors"
    x_threads = cols // VEC_ELEMS
    if threads % x_threads:
        return f"{threads} threads cannot tile a row of {x_threads} vectors"
    rows_per_pass = threads // x_threads
    if rows % rows_per_pass:
        return f"{rows} rows are not a multiple of the {rows_per_pass} rows one copy pass covers"
    return ""


def reasons(p: KernelParams, arch: str) -> list[str]:
    """Every reason `p` cannot be a valid build on `arch`; empty when it is valid."""
    check_arch(arch)
    out = []
    if p.dtype not in DTYPES:
        out.append(f"dtype {p.dtype} unsupported (FlyDSL gemm does {DTYPES})")
    if p.layout not in LAYOUTS:
        out.append(f"layout {p.layout} unsupported (FlyDSL gemm does {LAYOUTS})")
    for name in ("TILE_M", "TILE_N", "TILE_K", "STAGES", "WAVES_M", "WAVES_N", "SPLIT_K", "GROUP_M"):
        if getattr(p, name) < 1:
            return out + [f"{name}={getattr(p, name)} must be >= 1"]
    if p.M % p.TILE_M:
        out.append(f"M={p.M} not divisible by TILE_M={p.TILE_M}")
    if p.N % p.TILE_N:
        out.append(f"N={p.N} not divisible by TILE_N={p.TILE_N}")
    if p.K % (p.TILE_K * p.SPLIT_K):
        out.append(f"K={p.K} not divisible by TILE_K*SPLIT_K={p.TILE_K * p.SPLIT_K}")
    elif p.K // (p.TILE_K * p.SPLIT_K) < p.STAGES:
        out.append(f"{p.K // (p.TILE_K * p.SPLIT_K)} K tiles per split < STAGES={p.STAGES}")
    if p.TILE_K % MFMA_K[arch]:
        out.append(f"TILE_K={p.TILE_K} not a multiple of the {arch} MFMA K={MFMA_K[arch]}")
    if p.TILE_M % (p.WAVES_M * MFMA_MN):
        out.append(f"TILE_M={p.TILE_M} not a multiple of WAVES_M*{MFMA_MN}={p.WAVES_M * MFMA_MN}")
    if p.TILE_N % (p.WAVES_N * MFMA_MN):
        out.append(f"TILE_N={p.TILE_N} not a multiple of WAVES_N*{MFMA_MN}={p.WAVES_N * MFMA_MN}")
    if p.threads > MAX_THREADS:
        out.append(f"{p.threads} threads > {MAX_THREADS} per workgroup")
    a_why = _copy_fits(p.TILE_M, p.TILE_K, p.threads)
    if a_why:
        out.append(f"A copy: {a_why}")
    b_rows, b_cols = (p.TILE_N, p.TILE_K) if p.layout == "nt" else (p.TILE_K, p.TILE_N)
    b_why = _copy_fits(b_rows, b_cols, p.threads)
    if b_why:
        out.append(f"B copy: {b_why}")
    lds, limit = lds_bytes(p), LDS_LIMIT_BYTES[arch]
    if lds > limit:
        out.append(f"LDS {lds} B > {arch} limit {limit} B")
    acc = p.TILE_M * p.TILE_N // p.threads
    if acc > REGISTERS_PER_LANE // 2:
        out.append(f"{acc} fp32 accumulators per lane leave no room in {REGISTERS_PER_LANE} registers")
    if p.GROUP_M > 1 and p.M // p.TILE_M <= 1:
        out.append(f"GROUP_M={p.GROUP_M} is a duplicate of GROUP_M=1 with one row of tiles")
    return out


def _grid(search_space: str):
    s = search_space.lower()
    if s not in SEARCH_SPACES:
        raise BackendError(f"unknown search space {search_space!r}: expected one of {SEARCH_SPACES}")
    g = GRIDS[s]
    for tm, tn, tk, st, (wm, wn), sk, gm in itertools.product(
        g["TILE_M"], g["TILE_N"], g["TILE_K"], g["STAGES"], g["WAVES"], g["SPLIT_K"], g["GROUP_M"]
    ):
        yield candidate(TILE_M=tm, TILE_N=tn, TILE_K=tk, STAGES=st, WAVES_M=wm, WAVES_N=wn, SPLIT_K=sk, GROUP_M=gm)


def explain(problem: Problem, arch: str, search_space: str = "exhaustive") -> list[tuple[Candidate, list[str]]]:
    """Every grid point with its rejection reasons (empty list = valid), in grid order."""
    check_arch(arch)
    return [(c, reasons(kernel_params(c, problem), arch)) for c in _grid(search_space)]


def candidates(problem: Problem, arch: str, search_space: str = "exhaustive") -> list[Candidate]:
    """The valid candidates for `problem` on `arch`, in a fixed order."""
    return [c for c, why in explain(problem, arch, search_space) if not why]
