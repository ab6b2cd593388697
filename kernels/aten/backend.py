"""ATen backend: torch.mm / addmm / bmm (cuBLAS on NVIDIA, hipBLASLt on AMD, MKL on CPU), and
fp8 torch._scaled_mm (cuBLASLt for tensorwise scales, a CUTLASS kernel for rowwise on sm_90).

One candidate per problem, exactly the `extern_mm` choice Inductor always offers. The
runner writes into a preallocated output (`out=`), as Inductor's extern kernels do.
"""

from __future__ import annotations

from kselect.kernels.backend import Availability, Backend, CandidateError, register_backend
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem


@register_backend("aten")
class AtenBackend(Backend):
    templates = ("mm", "addmm", "bmm", "scaled_mm")

    def availability(self, device: str = "cuda") -> Availability:
        import torch

        if device.startswith("cuda") and not torch.cuda.is_available():
            return Availability(False, "no CUDA/ROCm device visible to torch")
        return Availability(True)

    def candidates(self, problem: Problem, search_space: str = "exhaustive") -> list[Candidate]:
        return [Candidate.make("aten", problem.op)]

    def compile(self, candidate: Candidate, problem: Problem):
        if candidate.template != problem.op:
            raise CandidateError("compile", f"ATen candidate {candidate.key} does not serve op {problem.op}")
        if problem.op == "scaled_mm":
            return ("scaled_mm", problem.fast_accum)
        return candidate.template

    def runner(self, compiled, operands):
        import torch

        a, b, out, bias = operands.a, operands.b, operands.out, operands.bias
        if isinstance(compiled, tuple):  # ("scaled_mm", fast_accum)
            from kselect.kernels.operands import scaled_mm_aten

            return lambda: scaled_mm_aten(operands, compiled[1], out=out)
        if compiled == "bmm":
            return lambda: torch.bmm(a, b, out=out)
        if compiled == "addmm":
            return lambda: torch.addmm(bias, a, b, out=out)
        return lambda: torch.mm(a, b, out=out)
