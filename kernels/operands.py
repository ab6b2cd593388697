"""Input/output tensors for a Problem, laid out as the problem's `layout` says.

Random normal data (never zeros: they hide unwritten outputs and run faster), scaled so
bf16 products stay well inside range, on any device.
"""

from __future__ import annotations

from dataclasses import dataclass

from .problem import Problem

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}


def torch_dtype(problem: Problem):
    import torch

    return getattr(torch, TORCH_DTYPES[problem.dtype])


@dataclass
class Operands:
    a: "object"  # logical (M, K) or (batch, M, K)
    b: "object"  # logical (K, N) or (batch, K, N)
    out: "object"  # (M, N) or (batch, M, N), row-major
    bias: "object" = None  # (N,) for addmm

    @property
    def nbytes(self) -> int:
        total = 0
        for t in (self.a, self.b, self.out, self.bias):
            if t is not None:
                total += t.untyped_storage().nbytes()
        return total


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
    batch = problem.batch if problem.op == "bmm" else 1
    a = _matrix(problem.M, problem.K, problem.layout[0] == "t", batch, dtype, device, gen)
    b = _matrix(problem.K, problem.N, problem.layout[1] == "t", batch, dtype, device, gen)
    out_shape = (batch, problem.M, problem.N) if problem.op == "bmm" else (problem.M, problem.N)
    out = torch.full(out_shape, float("nan"), dtype=dtype, device=device)
    bias = None
    if problem.op == "addmm":
        bias = torch.randn(problem.N, generator=gen, dtype=torch.float32, device=device).to(dtype)
    return Operands(a, b, out, bias)


def rotating_operands(problem: Problem, l2_bytes: int, device="cuda", first=None) -> list[Operands]:
    """`first` (or fresh seed-0 operands) plus enough copies for cold-L2 timing rotation."""
    from .timing import rotation_count

    base = first if first is not None else make_operands(problem, device, seed=0)
    n = rotation_count(base.nbytes, l2_bytes)
    return [base] + [make_operands(problem, device, seed=s) for s in range(1, n)]


def reference(problem: Problem, ops: Operands):
    """float32 reference result on the operands' device, multiplied in IEEE fp32 whatever
    torch's TF32 setting (a TF32 problem is checked against full precision)."""
    import torch

    from .precision import fp32_math

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


TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 2e-3, "tf32": 5e-3}  # tf32 keeps fp16's 10-bit mantissa
