"""Launching fp8 `_scaled_mm`'s Triton templates (scaled_kernels.py) for the Triton backend:
a candidate + problem -> LaunchPlan, a compile without a launch, and the launch itself.

The scaled kernels take A (M, K) row-major, B (K, N) column-major (B stored (N, K)), C and the
two fp32 scale pointers; ROWWISE and USE_FAST_ACCUM are constexprs, C's dtype is the plan's
`out_dtype`. Strides are specialised as the bf16 kernels' (backend.py), so one compile serves
every shape of a stride class.
"""

from __future__ import annotations

from kselect.kernels.backend import CandidateError
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.launch_plan import LaunchPlan

# Stride arguments of each scaled kernel, in signature order (cross_compile names them from it).
SCALED_STRIDE_ARGS = {
    "scaled_mm": ("stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"),
    "scaled_persistent_tma": ("stride_am", "stride_bn", "stride_cm", "stride_cn"),
}
_TORCH = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8e4m3": "float8_e4m3fn"}


def _stride_class(s: int) -> int:
    return 1 if s == 1 else (16 if s % 16 == 0 else 0)


def scaled_strides(problem: Problem) -> dict[str, int]:
    """A (M, K) row-major, B (K, N) column-major, C (M, N) row-major: element strides."""
    return {
        "stride_am": problem.K,
        "stride_ak": 1,
        "stride_bk": 1,
        "stride_bn": problem.K,
        "stride_cm": problem.N,
        "stride_cn": 1,
    }


def scaled_launch_plan(candidate: Candidate, problem: Problem, num_sms: int):
    """The LaunchPlan of a scaled template for a scaled_mm problem (constexprs as Inductor sets
    them: EVEN_K for the mm template, NUM_SMS for the persistent one)."""
    if problem.op != "scaled_mm":
        raise CandidateError("compile", f"template {candidate.template} serves scaled_mm, not {problem.op}")
    kw = candidate.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    const = {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": kw.get("GROUP_M", 8),
        "ROWWISE": problem.scaling == "rowwise",
        "USE_FAST_ACCUM": problem.fast_accum,
    }
    if candidate.template == "scaled_mm":
        const["EVEN_K"] = problem.K % bk == 0
    else:
        const["NUM_SMS"] = num_sms
    strides = scaled_strides(problem)
    spec = tuple(_stride_class(strides[n]) for n in SCALED_STRIDE_ARGS[candidate.template]) + (
        _stride_class(problem.N),
        _stride_class(problem.K),
    )
    return LaunchPlan(
        candidate.template,
        tuple(sorted(const.items())),
        kw["num_warps"],
        kw["num_stages"],
        problem.dtype,
        spec,
        out_dtype=problem.out_dtype,
    )


def scaled_kernel(template: str):
    from kselect.kernels.triton import scaled_kernels

    return scaled_kernels.scaled_mm_kernel if template == "scaled_mm" else scaled_kernels.scaled_persistent_tma_kernel


def _torch_dtype(name: str):
    import torch

    return getattr(torch, _TORCH[name])


def scaled_warmup(plan) -> None:
    """Compile `plan` into Triton's cache without launching (dtypes stand in for tensors)."""
    import torch
    import triton.language as tl

    rep = {1: 1, 16: 32, 0: 33}
    *strides, n_value, k_value = [rep[c] for c in plan.stride_spec]
    fp8, out = _torch_dtype(plan.dtype), _torch_dtype(plan.out_dtype)
    scaled_kernel(plan.template).warmup(
        fp8,
        fp8,
        out,
        torch.float32,
        torch.float32,
        64,
        n_value,
        k_value,
        *strides,
        grid=(1,),
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
        ACC_TYPE=tl.float32,
        **dict(plan.constexprs),
    )


def scaled_runner(plan, operands, ensure_tma_allocator):
    """A zero-argument launch of `plan` on scaled_mm `operands`, writing operands.out."""
    import triton
    import triton.language as tl

    a, b, out, sa, sb = operands.a, operands.b, operands.out, operands.scale_a, operands.scale_b
    M, K = a.shape
    N = b.shape[1]
    const = dict(plan.constexprs)
    kernel = scaled_kernel(plan.template)
    tiles = triton.cdiv(M, const["BLOCK_M"]) * triton.cdiv(N, const["BLOCK_N"])
    opts = dict(ACC_TYPE=tl.float32, num_warps=plan.num_warps, num_stages=plan.num_stages, **const)
    if plan.template == "scaled_mm":
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
        return lambda: kernel[(tiles,)](a, b, out, sa, sb, M, N, K, *strides, **opts)
    ensure_tma_allocator()
    grid = (min(const["NUM_SMS"], tiles),)
    strides = (a.stride(0), b.stride(1), out.stride(0), out.stride(1))
    return lambda: kernel[grid](a, b, out, sa, sb, M, N, K, *strides, **opts)
