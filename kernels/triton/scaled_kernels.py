"""Our Triton kernels for fp8 `_scaled_mm`: Inductor's two scaled templates with runtime sizes.

- `scaled_mm_kernel`: Inductor's `triton::mm` template as `tuned_scaled_mm` instantiates it:
  the mm main loop over fp8 tiles (fp32 accumulator; USE_FAST_ACCUM accumulates inside the
  dot, as the template's `tl.dot(a, b, acc)` branch), then the scale epilogue Inductor
  generates (`scale_mm_epilogue`): acc * (scale_a * scale_b), the scales read per output row
  and column (rowwise) or once (tensorwise), stored as C's dtype.
- `scaled_persistent_tma_kernel`: `scaled_mm_device_tma_epilogue_scaling` -- persistent
  programs over NUM_SMS, device-side descriptors over A (M, K) and B stored (N, K), one
  flattened loop over (tile, K step), `dot(a, b.T)`, scales applied at each tile's last step.
Sizes and strides are runtime values specialised as kernels.py explains; the mm template's
addressing (wrapped rows and columns, EVEN_K masks, GROUP_M order) is kernels.py's.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kselect.kernels.triton.kernels import _grouped_tile, _k_step_tiles


@triton.jit
def _scale_tile(acc, SA, SB, rows, cols, M, N, ROWWISE: tl.constexpr):
    """acc * (scale_a * scale_b) for one output tile: per row and column, or one scalar each."""
    if ROWWISE:
        a_scale = tl.load(SA + rows, mask=rows < M, other=0.0)
        b_scale = tl.load(SB + cols, mask=cols < N, other=0.0)
        return acc * (a_scale[:, None] * b_scale[None, :])
    return acc * (tl.load(SA) * tl.load(SB))


@triton.jit(do_not_specialize=["M"])
def scaled_mm_kernel(
    A,
    B,
    C,
    SA,
    SB,
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
    EVEN_K: tl.constexpr,
    ROWWISE: tl.constexpr,
    USE_FAST_ACCUM: tl.constexpr,
    ACC_TYPE: tl.constexpr,
):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _grouped_tile(pid, grid_m, grid_n, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_rows = rows % M
    b_cols = cols % N
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k0 in range(0, tl.maximum(tl.cdiv(K, BLOCK_K), 1)):  # at least one step: kernels.py says why
        a, b = _k_step_tiles(
            A, B, a_rows, b_cols, k0, ks, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_K, EVEN_K
        )
        if USE_FAST_ACCUM:
            acc = tl.dot(a, b, acc, out_dtype=ACC_TYPE)
        else:
            acc += tl.dot(a, b, out_dtype=ACC_TYPE)
    acc = _scale_tile(acc, SA, SB, rows, cols, M, N, ROWWISE)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(C + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(C.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["M"])
def scaled_persistent_tma_kernel(
    A,
    B,
    C,
    SA,
    SB,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    ROWWISE: tl.constexpr,
    USE_FAST_ACCUM: tl.constexpr,
    ACC_TYPE: tl.constexpr,
):
    start = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = grid_m * grid_n
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[stride_bn, 1], block_shape=[BLOCK_N, BLOCK_K])
    tiles_here = num_tiles // NUM_SMS + (start < num_tiles % NUM_SMS)
    tile = start - NUM_SMS
    ki = -1
    off_m = 0
    off_n = 0
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for _ in range(0, k_tiles * tiles_here):  # one flattened loop over (tile, K step)
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile += NUM_SMS
            pid_m, pid_n = _grouped_tile(tile, grid_m, grid_n, GROUP_M)
            off_m = pid_m * BLOCK_M
            off_n = pid_n * BLOCK_N
        off_k = ki * BLOCK_K
        a = a_desc.load([off_m.to(tl.int32), off_k.to(tl.int32)])
        b = b_desc.load([off_n.to(tl.int32), off_k.to(tl.int32)])
        if USE_FAST_ACCUM:
            acc = tl.dot(a, b.T, acc)
        else:
            acc += tl.dot(a, b.T)
        if ki == k_tiles - 1:
            rows = off_m + tl.arange(0, BLOCK_M)
            cols = off_n + tl.arange(0, BLOCK_N)
            acc = _scale_tile(acc, SA, SB, rows, cols, M, N, ROWWISE)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            c_ptrs = C + rows[:, None] * stride_cm + cols[None, :] * stride_cn
            tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=mask)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
