"""The registered "flydsl" Backend: our FlyDSL GEMM family for AMD gfx942/gfx950.

Candidates and compiles work on any machine (compile-only, in subprocesses); running a
candidate goes through the ROCm gate. Static features are the knobs plus, via
`isa_features`, register/LDS/instruction-mix numbers read from the compiled ISA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..backend import Availability, Backend, CandidateError, register_backend
from ..candidate import Candidate
from ..problem import Problem
from . import compile as fcompile
from . import space
from .gate import rocm_gate, target_arch
from .params import DTYPES, LAYOUTS, KernelParams

# FlyDSL knob -> the shared knob name every backend's features use.
SHARED_KNOBS = {
    "TILE_M": "BLOCK_M",
    "TILE_N": "BLOCK_N",
    "TILE_K": "BLOCK_K",
    "GROUP_M": "GROUP_M",
    "STAGES": "num_stages",
    "SPLIT_K": "k_split",
}


@dataclass(frozen=True)
class CompiledGemm:
    params: KernelParams
    arch: str
    result: fcompile.CompileResult


@register_backend("flydsl")
class FlyDSLBackend(Backend):
    templates = (space.TEMPLATE,)

    def __init__(self, arch: str | None = None):
        self._arch = space.check_arch(arch) if arch else None

    @property
    def arch(self) -> str:
        return self._arch or target_arch()

    def availability(self, device: str = "cuda") -> Availability:
        if device != "cuda":  # ROCm torch calls AMD GPUs "cuda"
            return Availability(False, f"FlyDSL kernels run on AMD GPUs (torch device 'cuda'), not {device!r}")
        return rocm_gate()

    @staticmethod
    def supports(problem: Problem) -> bool:
        return problem.op in ("mm", "addmm") and problem.dtype in DTYPES and problem.layout in LAYOUTS

    def candidates(self, problem: Problem, search_space: str = "exhaustive") -> list[Candidate]:
        if not self.supports(problem):
            return []
        return space.candidates(problem, self.arch, search_space)

    def compile(self, candidate: Candidate, problem: Problem) -> CompiledGemm:
        p = space.kernel_params(candidate, problem)
        res = fcompile.compile_one(p, self.arch)
        if not res.ok:
            raise CandidateError("compile", f"{res.status}: {res.reason}")
        return CompiledGemm(p, self.arch, res)

    def precompile(self, items: Iterable[tuple[Candidate, Problem]], workers: int = 0, wait: bool = True) -> dict:
        items = list(items)
        builds = [space.kernel_params(c, p) for c, p in items]
        results = fcompile.compile_many(builds, self.arch, workers=workers or None)
        return {(c, p): f"compile: {r.status}: {r.reason}" for (c, p), r in zip(items, results) if not r.ok}

    def runner(self, compiled: CompiledGemm, operands) -> Callable[[], object]:
        gate = rocm_gate()  # checked here too: never hand out a callable that would abort the process
        if not gate:
            raise CandidateError("launch", gate.reason)
        from .launch import run_gemm

        if operands.bias is not None:

            def run():
                run_gemm(compiled.params, compiled.arch, operands.a, operands.b, operands.out)
                return operands.out.add_(operands.bias)

            return run
        return lambda: run_gemm(compiled.params, compiled.arch, operands.a, operands.b, operands.out)

    def config_features(self, candidate: Candidate) -> dict[str, float]:
        """The shared knob schema (WAVES_M x WAVES_N shows up as num_warps); ISA numbers are
        problem-specific, so they come from `isa_features`."""
        feats = super().config_features(candidate)
        kw = candidate.kwargs
        for ours, shared in SHARED_KNOBS.items():
            feats[shared] = float(kw.get(ours, 0))
        feats["num_warps"] = float(kw.get("WAVES_M", 0) * kw.get("WAVES_N", 0))
        return feats

    def isa_features(self, candidate: Candidate, problem: Problem, arch: str | None = None) -> dict[str, float]:
        """`isa_*` features of the compiled kernel (compiles, or reads the cache); raises
        CandidateError when it does not compile to a usable kernel."""
        p = space.kernel_params(candidate, problem)
        res = fcompile.compile_one(p, space.check_arch(arch or self.arch))
        if res.isa is None or not res.ok:
            raise CandidateError("compile", f"{res.status}: {res.reason}")
        return res.isa.features()
