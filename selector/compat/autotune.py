"""Inductor's autotuning (`torch._inductor.select_algorithm`): the preprocessing function that
sees every backend's choices, the feedback saver that receives their timings, and the flag that
times ATen's choices under a CUDA graph."""

from __future__ import annotations

from typing import Callable

from kselect.kernels.flydsl import space as flydsl_space


def _register_with_selector_cache(adder: str, attribute: str, fn) -> Callable[[], None]:
    """Call select_algorithm.<adder>(fn); return a function that takes fn back off the
    algorithm-selector cache's <attribute> list (Inductor offers only clear-all)."""
    from torch._inductor import select_algorithm as sa

    getattr(sa, adder)(fn)

    def remove():
        fns = getattr(sa.get_algorithm_selector_cache(), attribute, None)
        if isinstance(fns, list) and fn in fns:
            fns.remove(fn)

    return remove


def add_preprocessing_fn(fn) -> Callable[[], None]:
    """Register fn(list[ChoiceCaller]) -> list[ChoiceCaller] (sees every backend's choices after
    codegen; one left = nothing benchmarked); returns a function that removes it."""
    return _register_with_selector_cache("add_preprocessing_fn", "preprocessing_fns", fn)


def add_feedback_saver(fn) -> Callable[[], None]:
    """Register an autotune feedback saver; returns a function that removes it."""
    return _register_with_selector_cache("add_feedback_saver", "feedback_saver_fns", fn)


def time_extern_under_cuda_graphs(choices) -> bool:
    """Ask Inductor to time its extern (ATen) choices by replaying a CUDA graph.

    Inductor's default timing of an extern call includes host dispatch gaps, so on the H200 it
    reads cuBLAS 1.22-1.57x slower than it runs in the compiled program (reports/faithfulness-
    h200) and stock picks slower Triton kernels; a graph replay removes that bias (Triton
    choices keep Inductor's own timing, which is within ~6%). Returns True when this torch
    honours the per-choice flag (2.13 has it), i.e. the winner Inductor reports is faithful.
    """
    from torch._inductor.select_algorithm import ExternKernelCaller

    honoured = True
    for choice in choices:
        # FlyDSL's first launch JIT-compiles in process: never inside a graph capture
        if isinstance(choice, ExternKernelCaller) and not choice.name.startswith(flydsl_space.CHOICE_NAME):
            if hasattr(choice, "_benchmark_with_cudagraphs"):
                choice._benchmark_with_cudagraphs = True
            else:
                honoured = False
    return honoured


def benchmark_example(node_or_layout):
    """A random tensor with the node's (or layout's) hinted sizes, strides, dtype and device, as
    Inductor makes its benchmark inputs."""
    from torch._inductor import ir
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    node = node_or_layout
    if isinstance(node, ir.Layout):
        node = ir.Buffer(name="kselect_verify_out", layout=node)
    return AlgorithmSelectorCache.benchmark_example_value(node)
