"""How an fp32 GEMM multiplies on a GPU: in IEEE fp32, or in TF32 on the tensor cores.

The two are different problems for kernel selection -- TF32 runs ~7x the fp32 peak on Hopper,
cuBLAS picks other kernels, and Inductor's templates set ALLOW_TF32 -- so kselect names them
apart: dtype "fp32" multiplies in IEEE fp32, "tf32" has fp32 operands and TF32 math. Which one a
user's fp32 GEMM is depends on torch's setting at the time (`torch.backends.cuda.matmul.
fp32_precision == "tf32"`, set by `torch.set_float32_matmul_precision("high")` or the older
`allow_tf32 = True`), which is what cuBLAS and Inductor read too.
"""

from __future__ import annotations

from contextlib import contextmanager

FP32_MATH = ("fp32", "tf32")  # the short dtype names of fp32 operands: IEEE math, TF32 math


def _matmul():
    import torch

    return torch.backends.cuda.matmul


def tf32_enabled() -> bool:
    """Whether torch multiplies fp32 matrices in TF32 on CUDA right now. Reads the setting
    Inductor reads (`fp32_precision`, torch >= 2.9; "none" is the default, IEEE); reading the
    legacy `allow_tf32` after a user set the new one raises in torch, so it is read only where
    the new one does not exist."""
    mm = _matmul()
    precision = getattr(mm, "fp32_precision", None)
    if precision is not None:
        return precision == "tf32"
    return bool(mm.allow_tf32)


def fp32_math_dtype() -> str:
    """The short dtype name of an fp32 GEMM on a GPU under torch's current setting."""
    return "tf32" if tf32_enabled() else "fp32"


@contextmanager
def fp32_math(dtype: str):
    """Run the block with CUDA fp32 matmuls in `dtype`'s math ("tf32" or "fp32"). Changes
    nothing where the setting already matches -- always so inside a user's compile, where the
    problem's dtype was read from that setting -- or for any other dtype; else sets it through
    the API the installed torch reads and restores it on exit (the collector's processes)."""
    if dtype not in FP32_MATH or tf32_enabled() == (dtype == "tf32"):
        yield
        return
    mm = _matmul()
    if getattr(mm, "fp32_precision", None) is not None:
        attr, wanted = "fp32_precision", ("tf32" if dtype == "tf32" else "ieee")
    else:
        attr, wanted = "allow_tf32", dtype == "tf32"
    before = getattr(mm, attr)
    setattr(mm, attr, wanted)
    try:
        yield
    finally:
        setattr(mm, attr, before)


def gemm_dtype(dtype, device) -> str:
    """A GEMM's short dtype name as kselect models it: the operands' dtype, except that fp32
    on a CUDA device is "tf32" where torch multiplies it in TF32."""
    from kselect.kernels.problem import canonical_dtype

    name = canonical_dtype(dtype)
    if name == "fp32" and getattr(device, "type", device) == "cuda":
        return fp32_math_dtype()
    return name
