"""One candidate's launch on one problem, as a value: its template, constexprs, warps, stages,
dtypes and the strides Triton compiles against (its compile identity). kernels/triton/backend.py
and scaled.py each make plans of their templates."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchPlan:
    """Everything needed to launch one candidate on one problem."""

    template: str
    constexprs: tuple  # sorted (name, value)
    num_warps: int
    num_stages: int
    dtype: str
    stride_spec: tuple  # Triton's view of the strides, then of N and K (compile identity)
    k_split: int = 0
    out_dtype: str = ""  # C's dtype where it differs from the operands' (scaled_mm)

    @property
    def compile_key(self) -> tuple:
        key = (self.template, self.constexprs, self.num_warps, self.num_stages, self.dtype, self.stride_spec)
        return key + (self.out_dtype,) if self.out_dtype else key
