"""verify for a GEMM whose fusable epilogue holds an activation (the time_fused option): the pick
is made on the fused forms of the kept set, not on the bare GEMM.

Why: on the H100 (reports/2026-12-06-epilogue-handover-h100) a GEMM with a ReLU x mul or a
bias + GELU epilogue ran 20-30 % faster steps when each kept choice was compiled with its
epilogue and timed whole than when Inductor's own epilogue benchmark picked among the same few:
Inductor times only the fastest bare template's fused form (max_epilogue_benchmarked_choices)
and reads ATen by its autotune, which misreads cuBLAS on GPUs.

How: the kept set is measured bare by kselect's harness (selector/verify/timing.py: ATen
checked, a wrong or failed choice dropped) and handed to Inductor as its multi-template buffer
with those times (compat/fused_timing.py); Inductor generates each template's fused form and
the epilogue's own kernel, and kselect times each generated module (`time_generated`: CUDA-graph
replay over rotating argument sets, as the collector). Inductor's scheduler applies its rule to
those readings; its pick is cached (Verifier.record_fusion_pick), so the next compile
builds that one choice and benchmarks nothing. A set kselect cannot measure goes to Inductor's
own benchmark as epilogue_fusion hands it (one warning); one left with a single choice, or no
template (nothing to fuse), is settled by the bare measurement. The verifier (verify/verifier.py)
measures and hands over; this module times what Inductor generates.
"""

from __future__ import annotations

import functools
import math

from kselect.selector.compat import choice_candidates

ARG_SETS_CAP = 8  # argument sets rotated through, at most (L2-cold reads, selector/verify/timing.py)


class FusedTimingUnavailable(RuntimeError):
    """A generated module kselect cannot time (Inductor's own reading is used instead)."""


def _tensors(args) -> list:
    import torch

    return [a for a in args if isinstance(a, torch.Tensor)]


def _mutated(kernel, args) -> list:
    """The arguments the kernel writes in place, paired by name as Inductor pairs them
    (its `fn.arg_names` with the module's `get_args()`)."""
    names = list(getattr(kernel, "mutated_arg_names", None) or ())
    by_name = dict(zip(getattr(getattr(kernel, "fn", None), "arg_names", ()), args))
    if any(n not in by_name for n in names):
        raise FusedTimingUnavailable(f"cannot tell which arguments the kernel mutates ({names})")
    return [by_name[n] for n in names]


def time_generated(mod, n_spills_threshold: int = 8) -> float:
    """The median ms of one Inductor-generated benchmark module (`get_args()`, `call(args)`,
    its kernel `triton_`): first called once (it compiles), a kernel spilling more registers
    than Inductor allows reads inf as Inductor's own reading does, then timed by
    kselect.kernels.timing.time_runners over rotated argument sets (on a GPU: CUDA-graph
    replays on a side stream, which the module's launch picks up as its current one).

    A kernel that writes a floating-point argument in place (the epilogue alone often updates
    the GEMM's output buffer) is replayed as is: the values it leaves do not change a GEMM's or
    a pointwise kernel's time. One that writes any other argument (indices, whose values
    steer its loads) raises FusedTimingUnavailable."""
    from kselect.kernels.timing import rotation_count, time_runners

    kernel = getattr(mod, "triton_", None)
    args = mod.get_args()
    tensors = _tensors(args)
    if not tensors:
        raise FusedTimingUnavailable("the module takes no tensors")
    if not all(getattr(t, "is_floating_point", lambda: False)() for t in _mutated(kernel, args)):
        raise FusedTimingUnavailable(f"the kernel mutates {list(kernel.mutated_arg_names)}, not all floating point")
    device = tensors[0].device
    mod.call(args)  # compiles the kernel, as Inductor's first call does
    launchers = getattr(kernel, "launchers", None) or []
    if launchers and getattr(launchers[0], "n_spills", 0) > n_spills_threshold:
        return math.inf
    sets = [args]
    if device.type == "cuda":
        import torch

        nbytes = sum(t.untyped_storage().nbytes() for t in tensors)
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        sets += [mod.get_args() for _ in range(rotation_count(nbytes, l2, cap=ARG_SETS_CAP) - 1)]
    runners = [functools.partial(mod.call, a) for a in sets]
    return time_runners(runners, device=device.type).median_ms


def read_fused(readings: dict, device_type: str, mod, caller, n_spills_threshold: int) -> float:
    """One fused-form reading for compat/fused_timing.py, recorded by candidate key ("epilogue":
    the epilogue alone); the GPU idled through the compiles, so it is warmed before the first."""
    from kselect.kernels.timing import warm_gpu
    from kselect.selector.verify.timing import WARM_DUTY, WARM_MS

    if not readings and device_type == "cuda":
        warm_gpu(WARM_MS, duty=WARM_DUTY)
    ms = time_generated(mod, n_spills_threshold)
    cand = choice_candidates.caller_candidate(caller) if caller is not None else None
    readings[cand.key if cand is not None else "epilogue"] = ms
    return ms
