"""Run grouped-GEMM candidates: ATen's `torch._grouped_mm` directly, and every choice Inductor's
grouped-mm lowering builds (its Triton `grouped_mm` template as Inductor generates and compiles
it), each on operands whose offsets follow the problem's routing, each checked against ATen.

The Inductor path compiles the one-op function under max-autotune with a preprocessing hook
that receives the lowering's choices, runs and times them there (the graph being lowered is
still current, as Inductor's own benchmark needs), and hands Inductor back ATen's choice alone,
so nothing else is benchmarked. Inductor would time the choices on its uniform offsets; here
they run on the problem's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN, TEMPLATE

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
REL_TOLERANCE = 2e-2  # bf16 outputs: K-long fp32 sums rounded once, as ATen's


@dataclass
class GroupedOperands:
    a: object
    b: object
    offs: object | None

    @property
    def args(self) -> tuple:
        return (self.a, self.b) + ((self.offs,) if self.offs is not None else ())


def _matrix(shape, transposed: bool, dtype, device, gen):
    """A tensor of logical `shape` whose last two dims are stored transposed when asked."""
    import torch

    if not transposed:
        return torch.randn(shape, dtype=torch.float32, device=device, generator=gen).to(dtype)
    stored = (*shape[:-2], shape[-1], shape[-2])
    return torch.randn(stored, dtype=torch.float32, device=device, generator=gen).to(dtype).transpose(-2, -1)


def grouped_operands(problem: GroupedProblem, device: str = "cuda", seed: int = 0) -> GroupedOperands:
    """A, B and the offsets of `problem` (its routing's), laid out as `problem.layout` says."""
    import torch

    dtype = getattr(torch, TORCH_DTYPES[problem.dtype])
    gen = torch.Generator(device=device).manual_seed(seed)
    g, m, n, k = problem.G, problem.M, problem.N, problem.K
    a_shape = (m, k) if problem.form.startswith("2d") else (g, m, k)
    b_shape = (k, n) if problem.form.endswith("2d") else (g, k, n)
    a = _matrix(a_shape, problem.layout[0] == "t", dtype, device, gen)
    b = _matrix(b_shape, problem.layout[1] == "t", dtype, device, gen)
    offs = None
    if problem.ragged_dim is not None:
        offs = torch.as_tensor(problem.offsets(), dtype=torch.int32, device=device)
    return GroupedOperands(a, b, offs)


def aten_grouped(ops: GroupedOperands):
    import torch

    return torch._grouped_mm(ops.a, ops.b, offs=ops.offs)


def aten_runner(ops: GroupedOperands) -> Callable[[], object]:
    return lambda: aten_grouped(ops)


def relative_error(out, ref) -> float:
    """max |out - ref| / max |ref| in fp32 (0 where both are all zeros)."""
    diff = (out.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item()
    return diff / scale if scale > 0 else diff


_KNOB = re.compile(r"\b(BLOCK_M|BLOCK_N|BLOCK_K|num_stages|num_warps)=(\d+)")


def choice_candidate(choice) -> Candidate | None:
    """An Inductor grouped-mm choice as kselect's candidate: ATen's, or a Triton `grouped_mm`
    config read from the choice's description (Inductor's "NAME=value, ..." of every template
    kwarg, num_stages and num_warps), None for any other choice."""
    if type(choice).__name__ == "ExternKernelCaller":
        return ATEN if getattr(getattr(choice, "choice", None), "name", "") == "_grouped_mm" else None
    if not re.fullmatch(rf"triton_{TEMPLATE}_\d+", str(getattr(choice, "name", ""))):
        return None
    knobs = {k: int(v) for k, v in _KNOB.findall(str(getattr(choice, "description", "")))}
    if len(knobs) != 5:
        return None
    return Candidate.make("triton", TEMPLATE, **knobs)


@dataclass
class StockPick:
    """What stock max-autotune chose for the GEMM (on its own uniform offsets), its compile's
    wall seconds, and the wall seconds of the same compile keeping ATen's choice alone (every
    choice still generated: the floor of a selector that prunes at the choices stage)."""

    candidate: Candidate | None
    compile_s: float
    one_kept_s: float


def _compile_once(ops: GroupedOperands, hook=None, saver=None) -> float:
    """One max-autotune compile and run of `_grouped_mm` on `ops` (ATen and Triton, every cache
    off, a fresh Triton cache) with the given preprocessing hook and feedback saver; wall seconds."""
    import time

    import torch
    from torch._inductor import config
    from torch._inductor import select_algorithm as sa

    from kselect.kernels.triton.cross_compile import _fresh_triton_cache

    cache = sa.get_algorithm_selector_cache()
    if hook is not None:
        sa.add_preprocessing_fn(hook)
    if saver is not None:
        sa.add_feedback_saver(saver)
    try:
        torch._dynamo.reset()
        with (
            _fresh_triton_cache(),
            config.patch(
                max_autotune=True,
                max_autotune_gemm=True,
                max_autotune_gemm_backends="ATEN,TRITON",
                force_disable_caches=True,
                benchmark_epilogue_fusion=False,  # one op, no epilogue: picked at the lowering, its saver fires
            ),
        ):
            fn = torch.compile(lambda *args: torch._grouped_mm(*args[:2], offs=args[2] if len(args) > 2 else None))
            t0 = time.perf_counter()
            fn(*ops.args)
            return time.perf_counter() - t0
    finally:
        for fns, fn_ in ((cache.preprocessing_fns, hook), (cache.feedback_saver_fns, saver)):
            if fn_ in fns:
                fns.remove(fn_)
        torch._dynamo.reset()


def _aten_alone(choices):
    return [c for c in choices if choice_candidate(c) == ATEN][:1] or choices[:1]


def stock_compile(ops: GroupedOperands) -> StockPick:
    """Stock max-autotune on `ops`, then the same compile keeping ATen's choice alone."""
    picked = []

    def saver(timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        if timings:
            picked.append(choice_candidate(min(timings, key=timings.get)))

    stock_s = _compile_once(ops, saver=saver)
    one_kept_s = _compile_once(ops, hook=lambda choices: _aten_alone(choices) if len(choices) > 1 else choices)
    return StockPick(picked[-1] if picked else None, stock_s, one_kept_s)


def inductor_grouped_choices(ops: GroupedOperands, on_choices: Callable) -> None:
    """Compile `_grouped_mm` on `ops` under max-autotune (ATen and Triton); `on_choices(choices)`
    gets the lowering's choices while the graph is current; Inductor then gets ATen's alone."""

    def hook(choices):
        if not any(choice_candidate(c) is not None for c in choices):
            return choices
        on_choices(list(choices))
        return _aten_alone(choices)

    _compile_once(ops, hook=hook)


def precompile_all(choices, workers: int | None = None) -> dict:
    """Compile every Triton choice at once on a thread pool, as Inductor's autotuning does
    (Triton's compile leaves the GIL for its passes and ptxas); returns {id(choice): error}."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    templates = [c for c in choices if type(c).__name__ != "ExternKernelCaller"]
    errors = {}

    def one(choice):
        try:
            choice.precompile()
        except Exception as exc:  # noqa: BLE001 -- a config that fails to compile is a failed row
            errors[id(choice)] = f"{type(exc).__name__}: {exc}"[:500]

    with ThreadPoolExecutor(max_workers=workers or min(16, os.cpu_count() or 1)) as pool:
        list(pool.map(one, templates))
    return errors


def choice_runner(choice, ops: GroupedOperands, out) -> Callable[[], object]:
    """A zero-argument launch of one Inductor choice writing `out` (ATen's returns its own)."""
    if type(choice).__name__ == "ExternKernelCaller":
        fn = choice.to_callable()
        return lambda: out.copy_(fn(*ops.args))
    choice.precompile()
    launch = choice.bmreq.make_run_fn(*ops.args, out=out)

    def run_into_out():
        launch()  # torch 2.11's run function returns None, later ones `out`: return `out` either way
        return out

    return run_into_out


def output_like(choice):
    """An empty tensor of the choice's output layout (sizes, padded strides, dtype, device)."""
    import torch

    layout = choice.layout
    return torch.empty_strided(
        [int(s) for s in layout.size], [int(s) for s in layout.stride], dtype=layout.dtype, device=layout.device
    )
