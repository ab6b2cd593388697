"""FlyDSL GEMM choices for Inductor mm/addmm autotuning on ROCm gfx942/gfx950.

Pieces: one `ExternKernelChoice` per op (`flydsl_gemm_mm`, `flydsl_gemm_addmm`) whose callable
launches our kernel through the ROCm gate; `FlyDSLGemmHeuristic`, registered in Inductor's
template-heuristic registry under that choice's uid only when the gate passes at import, so
Inductor's own KernelTemplateChoice machinery turns our configs into choices and a choices
handler can rank them before anything is compiled; `templates(...)`, what a handler adds to an
mm/addmm; and `usable(...)`, which compiles the FlyDSL configs that survived selection in
subprocesses (an LLVM abort cannot take Inductor down) and drops those that do not build.
The caller is the selector's choices handler (kselect.selector.inductor.flydsl_join).
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
from .space import CHOICE_NAME, OPS

log = logging.getLogger(__name__)
MAX_CHOICES = 16  # configs offered per GEMM (the cost model may narrow this further)


def flydsl_gemm(mat1, mat2, *, out, ab_layout: str, **knobs):
    """Extern kernel body: out = mat1 @ mat2 with the FlyDSL build named by `ab_layout` + `knobs`."""
    from .launch import run_gemm

    p = KernelParams(
        M=mat1.size(0), N=mat2.size(1), K=mat1.size(1), dtype=canonical_dtype(mat1.dtype), layout=ab_layout, **knobs
    )
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
        flydsl_addmm if op == "addmm" else flydsl_gemm, name=name, has_out_variant=True
    )


def _is_static(dim) -> bool:
    return isinstance(dim, int) or bool(getattr(dim, "is_number", False))


def problem_from_inputs(kernel_inputs, op: str) -> Problem:
    """Our Problem for Inductor's MMKernelInputs; ProblemError when FlyDSL cannot serve it.

    Shapes must be static: a build is specialised on M, N, K and has no tails, so a dynamic
    dimension would launch it on sizes it was never checked for."""
    symbolic = [d for d in kernel_inputs.mnk_symbolic() if not _is_static(d)]
    if symbolic:
        raise ProblemError(f"dynamic GEMM dimensions {symbolic}: FlyDSL builds are shape-specialised")
    m, n, k = (int(v) for v in kernel_inputs.mnk_hinted())
    strides = kernel_inputs.strides_hinted()
    a_stride, b_stride = strides[-2], strides[-1]  # mat1, mat2 (addmm's bias comes first)
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

    def get_extra_kwargs(self, kernel_inputs, op_name: str) -> dict[str, Any]:
        """Same for every config: the operand layout, and addmm's alpha/beta."""
        out = {"ab_layout": problem_from_inputs(kernel_inputs, op_name).layout}
        if op_name == "addmm":
            out.update(alpha=kernel_inputs.get_scalar("alpha"), beta=kernel_inputs.get_scalar("beta"))
        return out


# Registered only where launches are allowed (the extern choices are created there too);
# on CPU/CUDA Inductor never sees either. Keyed by the choice's uid, which is what
# InductorChoices.get_ktc looks heuristics up by.
if rocm_gate():
    for _op in OPS:
        register_template_heuristic(_extern(_op).uid, "cuda", op_name=_op)(FlyDSLGemmHeuristic)


def templates(kernel_inputs, op_name: str) -> list:
    """The ExternKernelChoice to add to this mm/addmm's templates, or [] (gate closed, or a
    problem FlyDSL cannot serve: logged at debug)."""
    if op_name not in OPS or not rocm_gate():
        return []
    try:
        problem_from_inputs(kernel_inputs, op_name)
    except ProblemError as exc:
        log.debug("FlyDSL skips this %s: %s", op_name, exc)
        return []
    return [_extern(op_name)]


def build_of(name: str, kwargs: dict, kernel_inputs) -> KernelParams:
    """The kernel build of one FlyDSL choice: its extern name ("flydsl_gemm_<op>"), its
    config kwargs (knobs) and the op's inputs."""
    problem = problem_from_inputs(kernel_inputs, name[len(CHOICE_NAME) + 1 :])
    return KernelParams(
        M=problem.M,
        N=problem.N,
        K=problem.K,
        dtype=problem.dtype,
        layout=problem.layout,
        **{k: int(kwargs[k]) for k in KNOB_NAMES},
    )


def usable(builds: list[KernelParams]) -> list[bool]:
    """Compile `builds` for this device in worker subprocesses (cached on disk); whether each
    gave a usable kernel. Failures are logged once per call; this never raises for a build."""
    results = fcompile.compile_many(builds, target_arch())
    bad = [r for r in results if not r.ok]
    if bad:
        log.info(
            "FlyDSL: %d of %d configs unusable (first: %s: %s)", len(bad), len(results), bad[0].status, bad[0].reason
        )
    return [r.ok for r in results]
