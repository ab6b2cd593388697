"""Launch one compiled FlyDSL GEMM on ROCm tensors, only after the ROCm gate passes.

Operands arrive as Inductor/ATen give them: `a` (M, K) row-major and `b` logical (K, N),
stored (N, K) row-major for "nt" (so `b.t()` is contiguous) or (K, N) for "nn".
"""

from __future__ import annotations

from ..backend import CandidateError
from .gate import rocm_gate
from .params import KernelParams


def _check(p: KernelParams, a, b, out) -> object:
    """The B view the kernel expects; a clear CandidateError when strides do not match."""
    if tuple(a.shape) != (p.M, p.K) or not a.is_contiguous():
        raise CandidateError(
            "launch", f"A must be a contiguous ({p.M}, {p.K}) tensor, got {tuple(a.shape)} strides {a.stride()}"
        )
    bk = b.t() if p.layout == "nt" else b
    want = (p.N, p.K) if p.layout == "nt" else (p.K, p.N)
    if tuple(bk.shape) != want or not bk.is_contiguous():
        raise CandidateError(
            "launch",
            f"B for layout {p.layout} must be stored {want} row-major, got "
            f"logical {tuple(b.shape)} strides {b.stride()}",
        )
    if tuple(out.shape) != (p.M, p.N) or not out.is_contiguous():
        raise CandidateError("launch", f"out must be a contiguous ({p.M}, {p.N}) tensor")
    return bk


def run_gemm(p: KernelParams, arch: str, a, b, out):
    """out = a @ b with the FlyDSL kernel `p`; raises CandidateError('launch') off ROCm."""
    gate = rocm_gate()
    if not gate:
        raise CandidateError("launch", gate.reason)
    import torch

    from .gemm_kernel import kselect_gemm, make_param

    bk = _check(p, a, b, out)
    param = make_param(p, arch)
    stream = torch.cuda.current_stream()
    if p.SPLIT_K > 1:
        acc = torch.zeros(p.M, p.N, dtype=torch.float32, device=out.device)
        kselect_gemm(acc, a, bk, param, stream=stream)
        out.copy_(acc)
    else:
        kselect_gemm(out, a, bk, param, stream=stream)
    return out
