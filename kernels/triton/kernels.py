"""Our Triton GEMM kernels: the same algorithms as Inductor's mm and persistent-TMA templates,
with M, N, K and strides as runtime arguments so one compile serves many shapes.

Inductor bakes sizes into each generated kernel; we keep the algorithm (GROUP_M swizzle,
EVEN_K-guarded masks, fp32 accumulator, the persistent tile loop over NUM_SMS programs
with device-side tensor descriptors) and make sizes runtime values, specialised the way
Triton specialises integers (equal to 1, divisible by 16, or neither):
- strides and K: unit strides give vectorised loads, and the K masks of a non-EVEN_K loop
  still vectorise when K % 16 == 0 (unspecialised they fell to scalar loads, up to 20x
  slower than Inductor's kernel);
- N: the epilogue's `cols < N` store mask is uniform over 16 columns when N % 16 == 0, so
  the store vectorises (16-byte stores, as in Inductor's baked-size kernels); unspecialised,
  every element is stored alone (sm_90 PTX: reports/2026-12-05-faithful-kernels);
- M is left runtime: C is row-major, so M's class changes no vector width (nor, on sm_90,
  any register count or instruction of the mm kernel's large tiles).
Two forms in the mm kernel's K loop matter with runtime sizes (same report, "The mm
template's large tiles"): the loop runs at least once, so no path reaches the epilogue with
the zero accumulator and ptxas keeps the wgmma pipeline asynchronous; and the loads index with
int32 offsets recomputed per step, as Inductor's template does, instead of carrying 64-bit
pointer tensors through the pipelined loop, which spills registers on wide, few-warp tiles.
reports/faithfulness-* measures how close this stays to the kernels Inductor itself
generates. Imported only where Triton is installed (to launch on a CUDA device, or to
compile for one: cross_compile.py).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _grouped_tile(tile, grid_m, grid_n, GROUP_M: tl.constexpr):
    """The (row, column) tile of linear index `tile` in grouped ordering: GROUP_M row-tiles
    share B's columns while they are hot in L2. Inlined into each kernel when it compiles."""
    width = GROUP_M * grid_n
    group_id = tile // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (tile % group_size)
    pid_n = (tile % width) // group_size
    return pid_m, pid_n


@triton.jit
def _k_step_tiles(
    A,
    B,
    a_rows,
    b_cols,
    k0,
    ks,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    """A's and B's tiles for K step `k0` of the mm template's main loop (the scaled template's too):
    int32 element offsets recomputed each step, as Inductor's template indexes, rather than
    64-bit pointer tensors carried through the pipelined loop (register spills); launch_plan
    refuses operands too large for int32 offsets. Rows and columns arrive wrapped into range,
    so only K is masked, and only when it is not a whole number of steps (EVEN_K)."""
    k_idx = k0 * BLOCK_K + ks
    a_ptrs = A + (a_rows[:, None] * stride_am + k_idx[None, :] * stride_ak)
    b_ptrs = B + (k_idx[:, None] * stride_bk + b_cols[None, :] * stride_bn)
    if EVEN_K:
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
    else:
        remaining = K - k0 * BLOCK_K
        a = tl.load(a_ptrs, mask=ks[None, :] < remaining, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < remaining, other=0.0)
    return a, b


@triton.jit(do_not_specialize=["M"])
def mm_kernel(
    A,
    B,
    C,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    HINT_M: tl.constexpr,
    HINT_N: tl.constexpr,
    ALLOW_TF32: tl.constexpr,
    ACC_TYPE: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _grouped_tile(pid, grid_m, grid_n, GROUP_M)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Wrap out-of-range rows/cols instead of masking the loads; the store is masked.
    # Contiguity hints only hold when a whole block fits in the dim (HINT_* set by the host).
    a_rows = rows % M
    if HINT_M:
        a_rows = tl.max_contiguous(tl.multiple_of(a_rows, BLOCK_M), BLOCK_M)
    b_cols = cols % N
    if HINT_N:
        b_cols = tl.max_contiguous(tl.multiple_of(b_cols, BLOCK_N), BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_batch = A + batch * stride_ab
    b_batch = B + batch * stride_bb

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    # At least one step (K >= 1): a loop that may run zero times leaves a path where the
    # accumulator is the zeros above, and ptxas then serialises every wgmma of the loop.
    for k0 in range(0, tl.maximum(tl.cdiv(K, BLOCK_K), 1)):
        a, b = _k_step_tiles(
            a_batch, b_batch, a_rows, b_cols, k0, ks, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_K, EVEN_K
        )
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)

    c_ptrs = C + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["M"])
def persistent_tma_kernel(
    A,
    B,
    C,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    A_ROW_MAJOR: tl.constexpr,
    B_ROW_MAJOR: tl.constexpr,
    ALLOW_TF32: tl.constexpr,
    ACC_TYPE: tl.constexpr,
):
    start = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = grid_m * grid_n
    # Descriptors over the operands as stored (row- or column-major), built once per program.
    if A_ROW_MAJOR:
        a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    else:
        a_desc = tl.make_tensor_descriptor(A, shape=[K, M], strides=[stride_ak, 1], block_shape=[BLOCK_K, BLOCK_M])
    if B_ROW_MAJOR:
        b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    else:
        b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[stride_bn, 1], block_shape=[BLOCK_N, BLOCK_K])

    for tile in tl.range(start, num_tiles, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile, grid_m, grid_n, GROUP_M)
        off_m = (pid_m * BLOCK_M).to(tl.int32)
        off_n = (pid_n * BLOCK_N).to(tl.int32)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
        for k in tl.range(0, K, BLOCK_K):
            k32 = k.to(tl.int32)
            if A_ROW_MAJOR:
                a = a_desc.load([off_m, k32])
            else:
                a = a_desc.load([k32, off_m]).T
            if B_ROW_MAJOR:
                b = b_desc.load([k32, off_n])
            else:
                b = b_desc.load([off_n, k32]).T
            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)
        rows = off_m + tl.arange(0, BLOCK_M)
        cols = off_n + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        c_ptrs = C + rows[:, None] * stride_cm + cols[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=mask)
