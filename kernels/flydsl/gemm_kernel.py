"""Our FlyDSL GEMM kernel: C = A @ B^T ("nt") or C = A @ B ("nn"), bf16/fp16, fp32 accumulate.

Design (kept deliberately plain so it compiles for both gfx942 and gfx950):

* one workgroup computes a TILE_M x TILE_N tile of C with WAVES_M x WAVES_N waves of 64 lanes,
  each wave a grid of 16x16 MFMA atoms (16x16x16 on gfx942, 16x16x32 on gfx950);
* A and B tiles go global -> registers (128-bit buffer loads) -> LDS; STAGES LDS buffers,
  the next tile is prefetched into registers while the current LDS buffer feeds the MFMAs;
* LDS rows are padded by LDS_PAD elements to spread LDS banks (counted in the LDS budget);
* "nn" keeps B in LDS as (TILE_K, TILE_N), N-contiguous, and reads it transposed element-wise;
* SPLIT_K > 1 splits K over grid.y; each split atomically adds fp32 partials into an fp32
  C workspace the host zeroes first (and casts afterwards);
* GROUP_M > 1 remaps block ids Triton-style so GROUP_M row-tiles share B tiles in L2.

Shapes are compile-time constants: one compiled kernel per (problem, config). Divisibility
(M % TILE_M, N % TILE_N, K % (TILE_K * SPLIT_K)) is required, never predicated; `space.py`
excludes configs that break it. This module imports flydsl and is only imported where a
compile or launch happens (a compile subprocess, or a ROCm process past the gate).
"""
# (no `from __future__ import annotations`: fx.struct reads real annotation types)

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import const_expr, gpu, range_constexpr

from .params import LDS_PAD, MFMA_K, VEC_ELEMS, WAVE_SIZE, KernelParams


@fx.struct
class GemmParam:
    """Compile-time parameters; every field keys FlyDSL's JIT cache."""

    is_fp16: fx.Constexpr[bool]
    b_kmajor: fx.Constexpr[bool]  # True: "nt" (B stored (N, K)); False: "nn" (B stored (K, N))
    m: fx.Constexpr[int]
    n: fx.Constexpr[int]
    k: fx.Constexpr[int]
    tile_m: fx.Constexpr[int]
    tile_n: fx.Constexpr[int]
    tile_k: fx.Constexpr[int]
    stages: fx.Constexpr[int]
    waves_m: fx.Constexpr[int]
    waves_n: fx.Constexpr[int]
    split_k: fx.Constexpr[int]
    group_m: fx.Constexpr[int]
    mma_k: fx.Constexpr[int]


def make_param(p: KernelParams, arch: str) -> GemmParam:
    return GemmParam(
        is_fp16=p.dtype == "fp16",
        b_kmajor=p.layout == "nt",
        m=p.M,
        n=p.N,
        k=p.K,
        tile_m=p.TILE_M,
        tile_n=p.TILE_N,
        tile_k=p.TILE_K,
        stages=p.STAGES,
        waves_m=p.WAVES_M,
        waves_n=p.WAVES_N,
        split_k=p.SPLIT_K,
        group_m=p.GROUP_M,
        mma_k=MFMA_K[arch],
    )


def _g2s_copy(rows: int, cols: int, threads: int, elem):
    """A tiled copy moving a row-major (rows, cols) tile with one 128-bit vector per lane."""
    atom = fx.make_copy_atom(fx.rocdl.BufferCopy128b(), elem)
    x_threads = cols // VEC_ELEMS
    return fx.make_tiled_copy_tv(
        atom,
        fx.make_ordered_layout((threads // x_threads, x_threads), order=(1, 0)),
        fx.make_ordered_layout((1, VEC_ELEMS), order=(1, 0)),
    )


@flyc.kernel
def kselect_gemm_kernel(out: fx.Tensor, a: fx.Tensor, b: fx.Tensor, tiled_mma: fx.TiledMma, param: GemmParam):
    elem = fx.Float16 if const_expr(param.is_fp16) else fx.BFloat16
    tm, tn, tk, stages = param.tile_m, param.tile_n, param.tile_k, param.stages
    threads = param.waves_m * param.waves_n * WAVE_SIZE
    lda = tk + LDS_PAD  # padded LDS row length, K-major tiles
    b_rows, b_cols = (tn, tk) if const_expr(param.b_kmajor) else (tk, tn)
    ldb = b_cols + LDS_PAD
    a_stage, b_stage = tm * lda, b_rows * ldb  # elements per LDS stage
    k_tiles = param.k // (tk * param.split_k)  # K tiles per split
    mma_iters = tk // param.mma_k

    tid = fx.thread_idx.x
    # Grouped block order (GROUP_M row tiles sweep N together, sharing B in L2).
    num_pid_m, num_pid_n = param.m // tm, param.n // tn
    pid = fx.block_idx.x
    if const_expr(param.group_m > 1):
        in_group = param.group_m * num_pid_n
        first_m = pid // in_group * param.group_m
        rest_m = num_pid_m - first_m
        size_m = (rest_m < param.group_m).select(rest_m, param.group_m)
        pid_m = first_m + pid % in_group % size_m
        pid_n = pid % in_group // size_m
    else:
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n
    k_tile0 = fx.block_idx.y * k_tiles

    @fx.struct
    class Smem:
        a: fx.Array[elem, stages * a_stage, 16]
        b: fx.Array[elem, stages * b_stage, 16]

    smem = fx.SharedAllocator().allocate(Smem)
    smem_a = smem.a.peek().ptr
    smem_b = smem.b.peek().ptr
    a_lds = fx.make_layout((tm, tk), (lda, 1))
    b_lds = fx.make_layout((b_rows, b_cols), (ldb, 1))
    # The MMA always sees B as (N, K); for "nn" that is the stored (K, N) tile read transposed.
    b_mma = b_lds if const_expr(param.b_kmajor) else fx.make_layout((tn, tk), (1, ldb))

    a_buf = fx.rocdl.make_buffer_tensor(a)
    b_buf = fx.rocdl.make_buffer_tensor(b)
    out_buf = fx.rocdl.make_buffer_tensor(out)
    gA = fx.flat_divide(a_buf, (tm, tk))
    gB = fx.flat_divide(b_buf, (b_rows, b_cols))

    g2s_a = _g2s_copy(tm, tk, threads, elem).get_slice(tid)
    g2s_b = _g2s_copy(b_rows, b_cols, threads, elem).get_slice(tid)
    g_atom = fx.make_copy_atom(fx.rocdl.BufferCopy128b(), elem)
    lds_atom = fx.make_copy_atom(fx.UniversalCopy128b(), elem)

    def a_tile(kt):
        return gA[None, None, pid_m, k_tile0 + kt]

    def b_tile(kt):
        if const_expr(param.b_kmajor):
            return gB[None, None, pid_n, k_tile0 + kt]
        return gB[None, None, k_tile0 + kt, pid_n]

    reg_a = fx.make_fragment_like(g2s_a.partition_S(a_tile(0)))
    reg_b = fx.make_fragment_like(g2s_b.partition_S(b_tile(0)))

    def load_global(kt):
        fx.copy(g_atom, g2s_a.partition_S(a_tile(kt)), reg_a)
        fx.copy(g_atom, g2s_b.partition_S(b_tile(kt)), reg_b)

    def store_lds(stage):
        fx.copy(lds_atom, reg_a, g2s_a.partition_D(fx.make_view(smem_a + stage * a_stage, a_lds)))
        fx.copy(lds_atom, reg_b, g2s_b.partition_D(fx.make_view(smem_b + stage * b_stage, b_lds)))

    thr_mma = tiled_mma.thr_slice(tid)
    a_s2r_atom = fx.make_copy_atom(fx.UniversalCopy64b(), elem)
    b_s2r_atom = a_s2r_atom if const_expr(param.b_kmajor) else fx.make_copy_atom(fx.UniversalCopy16b(), elem)
    s2r_a = fx.make_tiled_copy_A(a_s2r_atom, tiled_mma).get_slice(tid)
    s2r_b = fx.make_tiled_copy_B(b_s2r_atom, tiled_mma).get_slice(tid)
    frag_A = thr_mma.make_fragment_A(fx.make_view(smem_a, a_lds))
    frag_B = thr_mma.make_fragment_B(fx.make_view(smem_b, b_mma))
    frag_A_cp = s2r_a.retile(frag_A)
    frag_B_cp = s2r_b.retile(frag_B)
    gC = fx.flat_divide(out_buf, (tm, tn))[None, None, pid_m, pid_n]
    frag_C = thr_mma.make_fragment_C(gC)
    frag_C.fill(0.0)

    def compute(stage):
        sA = s2r_a.partition_S(fx.make_view(smem_a + stage * a_stage, a_lds))
        sB = s2r_b.partition_S(fx.make_view(smem_b + stage * b_stage, b_mma))
        for ki in range_constexpr(mma_iters):
            fx.copy(a_s2r_atom, sA[None, None, ki], frag_A_cp[None, None, ki])
            fx.copy(b_s2r_atom, sB[None, None, ki], frag_B_cp[None, None, ki])
            fx.gemm(tiled_mma, frag_C, frag_A[None, None, ki], frag_B[None, None, ki], frag_C)

    if const_expr(stages == 1):
        for kt in range(0, k_tiles, 1):
            load_global(kt)
            store_lds(0)
            gpu.barrier()
            compute(0)
            gpu.barrier()
    else:
        # Prologue: tiles 0 .. stages-2 straight into their LDS buffers.
        for s in range_constexpr(stages - 1):
            load_global(s)
            store_lds(s)
        gpu.barrier()
        # Steady state: prefetch tile kt+stages-1 into registers, compute tile kt, then park
        # the prefetch in the buffer computed one iteration ago (free since the last barrier).
        main_iters = k_tiles - (stages - 1)
        for kt in range(0, main_iters, 1):
            load_global(kt + stages - 1)
            compute(kt % stages)
            store_lds((kt + stages - 1) % stages)
            gpu.barrier()
        for s in range_constexpr(stages - 1):
            compute((main_iters + s) % stages)

    if const_expr(param.split_k > 1):
        atomic = fx.make_copy_atom(fx.rocdl.BufferAtomicAdd(fx.Float32), fx.Float32)
        thr_c = fx.make_tiled_copy_C(atomic, tiled_mma).get_slice(tid)
        fx.copy(atomic, thr_c.retile(frag_C), thr_c.partition_D(gC))
    else:
        out_atom = fx.make_copy_atom(fx.rocdl.BufferCopy16b(), elem)
        frag_out = fx.make_fragment_like(frag_C, elem)
        frag_out.store(frag_C.load().to(elem))
        thr_c = fx.make_tiled_copy_C(out_atom, tiled_mma).get_slice(tid)
        fx.copy(out_atom, thr_c.retile(frag_out), thr_c.partition_D(gC))


@flyc.jit
def kselect_gemm(out: fx.Tensor, a: fx.Tensor, b: fx.Tensor, param: GemmParam, stream: fx.Stream = fx.Stream(None)):
    elem = fx.Float16 if const_expr(param.is_fp16) else fx.BFloat16
    atom = fx.make_mma_atom(fx.rocdl.MFMA(16, 16, param.mma_k, elem))
    tiled_mma = fx.make_tiled_mma(atom, fx.make_layout((param.waves_m, param.waves_n, 1), (param.waves_n, 1, 0)))
    grid_mn = (param.m // param.tile_m) * (param.n // param.tile_n)
    kselect_gemm_kernel(out, a, b, tiled_mma, param).launch(
        grid=(grid_mn, param.split_k, 1), block=(param.waves_m * param.waves_n * WAVE_SIZE, 1, 1), stream=stream
    )
