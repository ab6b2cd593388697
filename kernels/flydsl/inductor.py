"""FlyDSL GEMM choices for Inductor mm/addmm autotuning on ROCm gfx942/gfx950.

Pieces: an `ExternKernelChoice` ("flydsl_gemm", made on first use) whose callable launches
our kernel (through the ROCm gate); a config heuristic registered with Inductor's template
heuristic registry only when the gate passes at import; and `flydsl_choices(...)`, which a
choices handler calls to get ChoiceCallers for one GEMM. Configs are precompiled in
subprocesses first (an LLVM abort cannot take Inductor down); anything going wrong yields
[] and one log line, so autotuning carries on with the other backends.
"""
from __future__ import annotations

import logging
from typing import Any, Generator

from torch._inductor.template_heuristics.base import TemplateConfigHeuristics
from torch._inductor.template_heuristics.registry import register_template_heuristic

from ..problem import Problem, ProblemError, canonical_dtype
from . import compile as fcompile
from . import space
from .gate import rocm_gate, target_arch
from .params import KNOB_NAMES, KernelParams

log = logging.getLogger(__name__)
CHOICE_NAME = "flydsl_gemm"
OPS = ("mm", "addmm")
MAX_CHOICES = 16          # configs offered per GEMM (the cost model may narrow this further)


def flydsl_gemm(mat1, mat2, *, out, ab_layout: str, **knobs):
    """Extern kernel body: out = mat1 @ mat2 with the FlyDSL build named by `ab_layout` + `knobs`."""
    from .launch import run_gemm

    p = KernelParams(M=mat1.size(0), N=mat2.size(1), K=mat1.size(1),
                     dtype=canonical_dtype(mat1.dtype), layout=ab_layout, **knobs)
    return run_gemm(p, target_arch(), mat1, mat2, out)


def flydsl_addmm(bias, mat1, mat2, *, out, alpha=1, beta=1, **knobs):
    flydsl_gemm(mat1, mat2, out=out, **knobs)
    if alpha != 1:
        out.mul_(alpha)
    return out.add_(bias, alpha=beta) if beta else out


def _extern(op: str):
    """The ExternKernelChoice for `op`, created once per process (Inductor forbids duplicates)."""
    from torch._inductor.select_algorithm import ExternKernelChoice

    name = f"{CHOICE_NAME}_{op}"
    return ExternKernelChoice.lookup(name) or ExternKernelChoice(
        flydsl_addmm if op == "addmm" else flydsl_gemm, name=name, has_out_variant=True)


def problem_from_inputs(kernel_inputs, op: str) -> Problem:
    """Our Problem for Inductor's MMKernelInputs; ProblemError when FlyDSL cannot serve it."""
    m, n, k = (int(v) for v in kernel_inputs.mnk_hinted())
    strides = kernel_inputs.strides_hinted()
    a_stride, b_stride = strides[-2], strides[-1]      # mat1, mat2 (addmm's bias comes first)
    if tuple(a_stride) != (k, 1):
        raise ProblemError(f"A strides {tuple(a_stride)} are not row-major ({k}, 1)")
    if tuple(b_stride) == (1, k):
        layout = "nt"
    elif tuple(b_stride) == (n, 1):
        layout = "nn"
    else:
        raise ProblemError(f"B strides {tuple(b_stride)} are neither (K, N) nor (N, K) row-major")
    return Problem(m, n, k, dtype=kernel_inputs.dtype(-1), layout=layout, op=op)


class FlyDSLGemmHeuristic(TemplateConfigHeuristics):
    """Configs for our kernel: the valid space for the problem, in the space's order, capped."""

    def _get_template_configs_impl(self, kernel_inputs, op_name: str) -> Generator[dict[str, Any], None, None]:
        try:
            problem = problem_from_inputs(kernel_inputs, op_name)
        except ProblemError as exc:
            log.debug("FlyDSL skips this %s: %s", op_name, exc)
            return
        for cand in space.candidates(problem, target_arch(), "default")[:MAX_CHOICES]:
            yield cand.kwargs


# Registered only where launches are allowed; on CPU/CUDA Inductor never sees it.
for _op in OPS:
    register_template_heuristic(f"{CHOICE_NAME}_{_op}", "cuda", register=bool(rocm_gate()),
                                op_name=_op)(FlyDSLGemmHeuristic)


def flydsl_choices(kernel_inputs, layout, op_name: str = "mm") -> list:
    """ChoiceCallers for one mm/addmm, precompiled; [] (and one log line) when not possible."""
    gate = rocm_gate()
    if not gate:
        return []                      # rocm_gate already logged why, at debug
    try:
        problem = problem_from_inputs(kernel_inputs, op_name)
        configs = list(FlyDSLGemmHeuristic().get_template_configs(kernel_inputs, op_name))
        builds = [KernelParams(M=problem.M, N=problem.N, K=problem.K, dtype=problem.dtype,
                               layout=problem.layout, **cfg.to_kwargs()) for cfg in configs]
        results = fcompile.compile_many(builds, target_arch())
        extern = _extern(op_name)
        choices = [extern.bind(kernel_inputs.nodes(), layout, ab_layout=problem.layout,
                               **{k: getattr(r.params, k) for k in KNOB_NAMES})
                   for r in results if r.ok]
        if len(choices) < len(results):
            log.info("FlyDSL: %d of %d configs for %s compiled usable", len(choices), len(results), problem.key)
        return choices
    except Exception as exc:           # never break autotuning: the other backends still run
        log.warning("FlyDSL choices unavailable for this %s, falling back: %s: %s",
                    op_name, type(exc).__name__, exc)
        return []
