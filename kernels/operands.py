"""Input/output tensors for a Problem, laid out as the problem's `layout` says.

Random normal data (never zeros: they hide unwritten outputs and run faster), scaled so
bf16 products stay well inside range, on any device. fp8 `scaled_mm` operands are e4m3 values
with fp32 scales that differ row by row (rowwise), so a kernel that misapplies a scale is caught.
"""

from __future__ import annotations

from dataclasses import dataclass

from .problem import Problem

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32", "fp8e4m3": "float8_e4m3fn"}


def torch_dtype(problem: Problem):
    import torch

    return getattr(torch, TORCH_DTYPES[problem.dtype])


def torch_out_dtype(problem: Problem):
    """C's torch dtype: `out_dtype` for scaled_mm, else the operands'."""
    import torch

    return getattr(torch, TORCH_DTYPES[problem.out_dtype or problem.dtype])


@dataclass
class Operands:
    a: "object"  # logical (M, K) or (batch, M, K)
    b: "object"  # logical (K, N) or (batch, K, N)
    out: "object"  # (M, N) or (batch, M, N), row-major
    bias: "object" = None  # (N,) for addmm
    scale_a: "object" = None  # scaled_mm: fp32, () tensorwise or (M, 1) rowwise
    scale_b: "object" = None  # scaled_mm: fp32, () tensorwise or (1, N) rowwise

    @property
    def gemm_args(self) -> tuple:
        """The arguments of `gemm_fn`: (a, b), (a, b, bias) for addmm, (a, b, scale_a, scale_b)
        for scaled_mm."""
        if self.scale_a is not None:
            return (self.a, self.b, self.scale_a, self.scale_b)
        return (self.a, self.b) if self.bias is None else (self.a, self.b, self.bias)

    @property
    def nbytes(self) -> int:
        total = 0
        for t in (self.a, self.b, self.out, self.bias, self.scale_a, self.scale_b):
            if t is not None:
                total += t.untyped_storage().nbytes()
        return total


def gemm_fn(problem: Problem | str):
    """The eager GEMM a bench, a re-timing or the faithfulness check compiles for a problem
    (called on its `Operands.gemm_args`): a @ b, plus the bias for addmm; for fp8 scaled_mm
    `torch._scaled_mm` with the problem's output dtype and accumulation, as a user calls it. A
    bare op name serves the ops whose GEMM it fixes (mm, bmm, addmm)."""
    op = problem if isinstance(problem, str) else problem.op
    if op == "scaled_mm":
        if isinstance(problem, str):
            raise ValueError("scaled_mm's GEMM needs its Problem (output dtype, fast accumulation), not its op name")
        import torch

        out_dtype, fast_accum = torch_out_dtype(problem), problem.fast_accum
        return lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype, use_fast_accum=fast_accum)
    if op == "addmm":
        return lambda a, b, bias: a @ b + bias
    return lambda a, b: a @ b


def _matrix(rows: int, cols: int, transposed: bool, batch: int, dtype, device, gen):
    import torch

    shape = (cols, rows) if transposed else (rows, cols)
    if batch > 1:
        shape = (batch,) + shape
    x = torch.randn(shape, generator=gen, dtype=torch.float32, device=device)
    x = (x * (1.0 / max(1.0, (cols if not transposed else rows)) ** 0.25)).to(dtype)
    return x.transpose(-1, -2) if transposed else x


def make_operands(problem: Problem, device="cuda", seed: int = 0) -> Operands:
    """Fresh operands for `problem`; A and B carry the strides its layout names."""
    import torch

    dtype = torch_dtype(problem)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    if problem.op == "scaled_mm":
        return _scaled_operands(problem, dtype, device, gen)
    batch = problem.batch if problem.op == "bmm" else 1
    a = _matrix(problem.M, problem.K, problem.layout[0] == "t", batch, dtype, device, gen)
    b = _matrix(problem.K, problem.N, problem.layout[1] == "t", batch, dtype, device, gen)
    out_shape = (batch, problem.M, problem.N) if problem.op == "bmm" else (problem.M, problem.N)
    out = torch.full(out_shape, float("nan"), dtype=dtype, device=device)
    bias = None
    if problem.op == "addmm":
        bias = torch.randn(problem.N, generator=gen, dtype=torch.float32, device=device).to(dtype)
    return Operands(a, b, out, bias)


def _scaled_operands(problem: Problem, dtype, device, gen) -> Operands:
    """fp8 A (M, K) row-major, B (K, N) column-major, scales near 1/sqrt(K) so C is O(1)."""
    import torch

    m, n, k = problem.M, problem.N, problem.K
    a = torch.randn((m, k), generator=gen, device=device).to(dtype)
    b = torch.randn((n, k), generator=gen, device=device).to(dtype).t()
    shapes = ((), ()) if problem.scaling == "tensorwise" else ((m, 1), (1, n))
    sa, sb = (
        (torch.rand(s, generator=gen, device=device) + 0.5) / k**0.25  # 0.5-1.5, varying per row
        for s in shapes
    )
    out = torch.full((m, n), float("nan"), dtype=torch_out_dtype(problem), device=device)
    return Operands(a, b, out, scale_a=sa, scale_b=sb)


def scaled_mm_aten(ops: Operands, fast_accum: bool, out=None):
    """ATen's `_scaled_mm` on `ops` (cuBLASLt on CUDA), into `out` where given."""
    import torch

    kwargs = {"out": out} if out is not None else {}
    return torch._scaled_mm(
        ops.a, ops.b, ops.scale_a, ops.scale_b, out_dtype=ops.out.dtype, use_fast_accum=fast_accum, **kwargs
    )


def rotating_operands(problem: Problem, l2_bytes: int, device="cuda", first=None) -> list[Operands]:
    """`first` (or fresh seed-0 operands) plus enough copies for cold-L2 timing rotation."""
    from .timing import rotation_count

    base = first if first is not None else make_operands(problem, device, seed=0)
    n = rotation_count(base.nbytes, l2_bytes)
    return [base] + [make_operands(problem, device, seed=s) for s in range(1, n)]


def reference(problem: Problem, ops: Operands):
    """float32 reference result on the operands' device, multiplied in IEEE fp32 whatever
    torch's TF32 setting (a TF32 problem is checked against full precision). For scaled_mm it is
    ATen's own output (every candidate is checked against ATen's), once ATen's agrees with the
    fp32 product of the dequantised operands; a ValueError where it does not."""
    import torch

    from .precision import fp32_math

    if problem.op == "scaled_mm":
        with fp32_math("fp32"):
            exact = torch.matmul(ops.a.float(), ops.b.float()) * ops.scale_a * ops.scale_b
        aten = scaled_mm_aten(ops, problem.fast_accum).float()
        err = relative_error(aten, exact)
        if not err <= TOLERANCE[problem.dtype]:
            raise ValueError(f"ATen's _scaled_mm is off the dequantised fp32 product: relative error {err:.3g}")
        return aten
    with fp32_math("fp32"):
        ref = torch.matmul(ops.a.float(), ops.b.float())
    if ops.bias is not None:
        ref = ref + ops.bias.float()
    return ref


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref||; inf where `out` has NaN/inf (an unwritten element)."""
    import torch

    out = out.float()
    if not torch.isfinite(out).all():
        return float("inf")
    denom = torch.linalg.vector_norm(ref).item() or 1.0
    return torch.linalg.vector_norm(out - ref).item() / denom


# ||out - ref|| / ||ref|| a correct kernel stays within. tf32 keeps fp16's 10-bit mantissa.
# fp8: against ATen's output (C in bf16, fp16 or fp32 from fp32 partial sums: order and output
# rounding differ by ~1e-3; a misapplied rowwise scale or a dropped K tile by >= 0.1).
TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 2e-3, "tf32": 5e-3, "fp8e4m3": 2e-2}
