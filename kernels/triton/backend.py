"""Triton backend: Inductor's mm, persistent-TMA and decompose-k candidates on CUDA, and fp8
`_scaled_mm`'s two scaled templates (scaled.py).

Candidate space: `triton_space` (Inductor's own lists, clamping and dedup). Kernels:
`kernels.py` (Inductor's algorithms with runtime sizes). A compiled kernel is keyed by
its constexprs, warps, stages, dtype and stride specialisation -- not by M, N, K -- so
one compile serves every shape that shares them; `precompile` fills Triton's on-disk
cache from a pool of processes before timing starts.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor, as_completed

from kselect.kernels.backend import Availability, Backend, CandidateError, register_backend
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.launch_plan import LaunchPlan
from kselect.kernels.triton.scaled import SCALED_STRIDE_ARGS, scaled_launch_plan, scaled_runner, scaled_warmup
from kselect.kernels.triton.space import SCALED_TEMPLATES, TEMPLATES, triton_space

log = logging.getLogger(__name__)


# The mm kernel indexes each (batch's) operand with int32 element offsets, as Inductor's
# template does unless a tensor is larger (then it compiles int64 indexing instead).
MM_MAX_OPERAND_ELEMENTS = 2**31 - 1


# The stride arguments each Triton kernel takes, in its signature's order (the plan's
# stride_spec follows it; cross_compile names the arguments from it).
STRIDE_ARGS = {
    "mm": (
        "stride_ab",
        "stride_am",
        "stride_ak",
        "stride_bb",
        "stride_bk",
        "stride_bn",
        "stride_cb",
        "stride_cm",
        "stride_cn",
    ),
    "persistent_tma": ("stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"),
    **SCALED_STRIDE_ARGS,
}


def _stride_class(s: int) -> int:
    """How Triton specialises an integer argument: 1, divisible by 16, or neither."""
    return 1 if s == 1 else (16 if s % 16 == 0 else 0)


def problem_strides(problem: Problem) -> dict[str, int]:
    """Element strides of A (M,K), B (K,N) and C (M,N) for the problem's layout."""
    M, N, K = problem.M, problem.N, problem.K
    sam, sak = (1, M) if problem.layout[0] == "t" else (K, 1)
    sbk, sbn = (1, K) if problem.layout[1] == "t" else (N, 1)
    batched = problem.op == "bmm"
    return {
        "stride_ab": M * K if batched else 0,
        "stride_am": sam,
        "stride_ak": sak,
        "stride_bb": K * N if batched else 0,
        "stride_bk": sbk,
        "stride_bn": sbn,
        "stride_cb": M * N if batched else 0,
        "stride_cm": N,
        "stride_cn": 1,
    }


def launch_plan(candidate: Candidate, problem: Problem, num_sms: int) -> LaunchPlan:
    """Pure function: candidate + problem -> constexprs (EVEN_K, hints, TMA majors, ...)."""
    if candidate.template in SCALED_TEMPLATES:
        return scaled_launch_plan(candidate, problem, num_sms)
    if problem.op == "scaled_mm":
        raise CandidateError("compile", f"template {candidate.template!r} does not serve scaled_mm")
    if candidate.template not in TEMPLATES:
        raise CandidateError("compile", f"unknown Triton template {candidate.template!r}")
    strides = problem_strides(problem)
    if candidate.template == "decompose_k":
        ks = int(candidate.get("k_split"))
        if ks < 2 or problem.K % ks:
            raise CandidateError("compile", f"k_split={ks} does not divide K={problem.K}")
        return LaunchPlan("decompose_k", (), 0, 0, problem.dtype, (), ks)
    kw = candidate.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    # Inductor's rule (template_heuristics/triton.py): TF32 where torch allows it and the GEMM is
    # at least 16 x min(N, K) >= 512; a "tf32" problem is one where torch allows it
    allow_tf32 = problem.dtype == "tf32" and problem.M >= 16 and min(problem.N, problem.K) >= 512
    const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": kw.get("GROUP_M", 8), "ALLOW_TF32": allow_tf32}
    if candidate.template == "mm":
        largest = max(problem.M * problem.K, problem.K * problem.N, problem.M * problem.N)
        if largest > MM_MAX_OPERAND_ELEMENTS:
            raise CandidateError(
                "compile",
                f"an operand of {largest} elements exceeds the mm kernel's "
                f"int32 indexing ({MM_MAX_OPERAND_ELEMENTS} elements)",
            )
        # Contiguity hints matter only along a contiguous M (A column-major) or N (B
        # row-major); elsewhere they are off so 'nt' shapes share one binary per config.
        const.update(
            EVEN_K=problem.K % bk == 0,
            HINT_M=problem.layout[0] == "t" and problem.M >= bm,
            HINT_N=problem.layout[1] == "n" and problem.N >= bn,
        )
    else:
        if problem.op == "bmm":
            raise CandidateError("compile", "persistent TMA serves 2-D operands only")
        const.update(NUM_SMS=num_sms, A_ROW_MAJOR=problem.layout[0] == "n", B_ROW_MAJOR=problem.layout[1] == "n")
    # N's and K's classes join the strides': Triton specialises them (see kernels.py).
    spec = tuple(_stride_class(strides[n]) for n in STRIDE_ARGS[candidate.template]) + (
        _stride_class(problem.N),
        _stride_class(problem.K),
    )
    return LaunchPlan(
        candidate.template, tuple(sorted(const.items())), kw["num_warps"], kw["num_stages"], problem.dtype, spec
    )


def _kernel_for(template: str):
    from kselect.kernels.triton import kernels as triton_kernels

    return triton_kernels.mm_kernel if template == "mm" else triton_kernels.persistent_tma_kernel


def _torch_dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[name]


def _representative_stride(cls: int) -> int:
    return {1: 1, 16: 32, 0: 33}[cls]


def _warmup(plan: LaunchPlan) -> None:
    """Compile `plan` into Triton's cache without launching (dtypes stand in for tensors)."""
    if plan.template in SCALED_TEMPLATES:
        return scaled_warmup(plan)
    kernel = _kernel_for(plan.template)
    dt = _torch_dtype(plan.dtype)
    *strides, n_value, k_value = [_representative_stride(c) for c in plan.stride_spec]
    args = [dt, dt, dt, 64, n_value, k_value, *strides]
    kernel.warmup(
        *args,
        grid=(1,),
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
        ACC_TYPE=_acc_type(plan.dtype),
        **dict(plan.constexprs),
    )


def _acc_type(dtype: str):
    """fp32 accumulation for every input dtype, as Inductor's templates use for bf16/fp16/fp32."""
    import triton.language as tl

    return tl.float32


def _pool_warmup(plan: LaunchPlan) -> str | None:
    try:
        _warmup(plan)
        return None
    except Exception as exc:  # compile failures come in many types
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]


def _future_error(fut) -> str | None:
    """A background compile's outcome: None (compiled) or why it failed."""
    try:
        return fut.result()
    except Exception as exc:  # a worker died (e.g. LLVM abort)
        return f"compile worker died: {type(exc).__name__}: {exc}"


_ALLOCATOR_SET = False


def _ensure_tma_allocator() -> None:
    """Device-side tensor descriptors need scratch memory from a global allocator."""
    global _ALLOCATOR_SET
    if _ALLOCATOR_SET:
        return
    import torch
    import triton

    def alloc(size: int, alignment: int, stream):
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    _ALLOCATOR_SET = True


@register_backend("triton")
class TritonBackend(Backend):
    templates = TEMPLATES + SCALED_TEMPLATES

    def __init__(self):
        self._compiled: dict[tuple, str | None] = {}  # compile_key -> None (ok) or error
        self._pending: dict = {}  # compile_key -> future of a background compile
        self._num_sms = None

    def availability(self, device: str = "cuda") -> Availability:
        try:
            import torch
            import triton  # noqa: F401
        except ImportError as exc:
            return Availability(False, f"triton is not importable: {exc}")
        if not torch.cuda.is_available():
            return Availability(False, "no CUDA device visible to torch")
        if torch.version.hip is not None:
            return Availability(False, "ROCm: Inductor uses its ROCm Triton heuristics; not covered yet")
        return Availability(True)

    @property
    def num_sms(self) -> int:
        if self._num_sms is None:
            import torch

            self._num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        return self._num_sms

    def candidates(self, problem: Problem, search_space: str = "exhaustive") -> list[Candidate]:
        return triton_space(problem, search_space)

    def kernel(self, template: str):
        """The Triton kernel that runs `template`'s plans (a study may swap in a variant)."""
        return _kernel_for(template)

    def plan(self, candidate: Candidate, problem: Problem) -> LaunchPlan:
        return launch_plan(candidate, problem, self.num_sms)

    def compile(self, candidate: Candidate, problem: Problem) -> LaunchPlan:
        plan = self.plan(candidate, problem)
        if plan.template == "decompose_k":
            return plan
        key = plan.compile_key
        if key not in self._compiled and key in self._pending:
            self._compiled[key] = _future_error(self._pending.pop(key))
        if key not in self._compiled:
            self._compiled[key] = _pool_warmup(plan)
        if self._compiled[key] is not None:
            raise CandidateError("compile", self._compiled[key])
        return plan

    def precompile(self, items, workers: int = 0, wait: bool = True) -> dict:
        """Compile every distinct plan once, in parallel processes; returns {key: error}.

        With `wait=False` the compiles run in the background in the order of `items` and this
        returns at once ({}): `compile` then waits only for its own plan, so a collector
        measures the first shape while the later shapes' kernels still compile."""
        plans = {}
        for cand, prob in items:
            try:
                plan = self.plan(cand, prob)
            except CandidateError:
                continue
            if (
                plan.template != "decompose_k"
                and plan.compile_key not in self._compiled
                and plan.compile_key not in self._pending
            ):
                plans.setdefault(plan.compile_key, plan)
        if not plans:
            return {}
        workers = workers or max(1, min(len(plans), (os.cpu_count() or 2) - 1))
        if not wait:
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
            self._pending.update({key: pool.submit(_pool_warmup, plan) for key, plan in plans.items()})
            pool.shutdown(wait=False)  # takes no more work; the queued compiles still run
            return {}
        errors = {}
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover
            tqdm = None
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_pool_warmup, plan): key for key, plan in plans.items()}
            it = as_completed(futures)
            if tqdm is not None:
                it = tqdm(it, total=len(futures), desc="compile", unit="kernel", mininterval=5)
            for fut in it:
                key = futures[fut]
                err = _future_error(fut)
                self._compiled[key] = err
                if err:
                    errors[key] = err
        return errors

    def runner(self, plan: LaunchPlan, operands):
        import triton

        a, b, out = operands.a, operands.b, operands.out
        if plan.template in SCALED_TEMPLATES:
            return scaled_runner(plan, operands, _ensure_tma_allocator)
        if plan.template == "decompose_k":
            return self._decompose_k_runner(plan.k_split, a, b, out)
        M, K = a.shape[-2], a.shape[-1]
        N = b.shape[-1]
        const = dict(plan.constexprs)
        kernel = self.kernel(plan.template)
        acc = _acc_type(plan.dtype)
        bm, bn = const["BLOCK_M"], const["BLOCK_N"]
        tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        if plan.template == "mm":
            batch = a.shape[0] if a.dim() == 3 else 1
            sa = (a.stride(0) if a.dim() == 3 else 0, a.stride(-2), a.stride(-1))
            sb = (b.stride(0) if b.dim() == 3 else 0, b.stride(-2), b.stride(-1))
            sc = (out.stride(0) if out.dim() == 3 else 0, out.stride(-2), out.stride(-1))
            grid = (tiles, batch)
            return lambda: kernel[grid](
                a,
                b,
                out,
                M,
                N,
                K,
                *sa,
                *sb,
                *sc,
                ACC_TYPE=acc,
                num_warps=plan.num_warps,
                num_stages=plan.num_stages,
                **const,
            )
        _ensure_tma_allocator()
        grid = (min(const["NUM_SMS"], tiles),)
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
        return lambda: kernel[grid](
            a, b, out, M, N, K, *strides, ACC_TYPE=acc, num_warps=plan.num_warps, num_stages=plan.num_stages, **const
        )

    @staticmethod
    def _decompose_k_runner(k_split: int, a, b, out):
        """Inductor's decompose-k subgraph: split K into a batch, bmm in fp32, sum, cast."""
        import torch

        M, K = a.shape
        N = b.shape[1]
        part = K // k_split

        def run():
            a3 = a.reshape(M, k_split, part).permute(1, 0, 2)
            b3 = b.reshape(k_split, part, N)
            partial = torch.bmm(a3, b3, out_dtype=torch.float32)
            return torch.sum(partial, 0, out=out)

        return run
