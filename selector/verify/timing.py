"""Verify mode's own measurement of the kept choices: the collector's harness, not Inductor's.

Why: on the H200 Inductor's autotune times ATen (cuBLAS) 1.22-1.57x slower than it runs in
the compiled program (host dispatch gaps; reports/2026-12-02-faithfulness-h200), so a verified set that
holds ATen and a close Triton kernel is settled by an artefact -- stock picked a 1.29x slower
kernel on 333x7168x5120 that way. Here every kept choice runs on the same operands, is
checked against the ATen result (a wrong kernel is dropped, never picked), and is timed by
`kselect.kernels.timing.time_runners` (CUDA-graph replay over L2-cold rotating operands), the
harness the training data was measured with. The kept choices are read in interleaved rounds
(kselect.kernels.timing.time_interleaved), and a template replaces ATen only when it is faster
than ATen beyond the noise of those same rounds (`Measured.winner`, selector/verify/pick.py).
The winner alone goes back to Inductor, which then benchmarks nothing.

Anything this module cannot do for a set (a choice kind without a run function, a failed
graph capture) raises VerifyTimingUnavailable and Inductor benchmarks the set as before.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass

from kselect.kernels.timing import warm_gpu
from kselect.selector.compat.autotune import benchmark_example
from kselect.selector.compat.choice_candidates import is_extern
from kselect.selector.compat.signatures import size_hint
from kselect.selector.verify.pick import Measured, VerifyTimingUnavailable
from kselect.selector.verify.template_compiles import Compiles

log = logging.getLogger("kselect.selector")

MAX_ROTATION_BYTES = 1 << 30  # operand copies for L2-cold timing, at most this much memory
MAX_SETS = 8
# GPU work before the first timing: compiling the kept set leaves the GPU idle for seconds and
# its clocks drop, so whichever choice was timed first ran slower. On the H200 (kselect retime,
# reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels) the first-timed choice -- verify's top-ranked one -- read 1.5 % slower
# in median than its neighbours, up to 15 % (skinny GEMMs with N or K = 128256), against the collector,
# which warms the GPU once and then keeps it busy.
WARM_MS = 100.0
# ...but not at full power: 100 ms of back-to-back 4096^2 GEMMs put the H100 at its software
# power cap (SM clock ~1605 of 1980 MHz), and verify then read cuBLAS 3-15 % slower than the
# compiled function runs it, templates less so, which tipped near-ties to templates
# (reports/2026-12-06-verify-aten-reading). The warm-up idles 70 % of each slice instead, and
# the GPU idles after each read for as long as the read took, so reads of large GEMMs in a row
# do not hold the card at the cap either.
WARM_DUTY = 0.3
IDLE_RATIO = 1.0
# Interleaved rounds over the kept set: each round reads every kept choice once (alternating
# order), so drift between rounds falls on ATen and the templates alike.
ROUNDS = 3


def _is_aten(choice) -> bool:
    """The reference result: an ATen library call (FlyDSL is an extern call too, but not ATen)."""
    from kselect.selector.compat.choice_candidates import caller_candidate
    from kselect.selector.decide.candidate_sets import is_aten

    cand = caller_candidate(choice)
    return is_extern(choice) and cand is not None and is_aten(cand)


def _check_runnable(choices) -> None:
    nodes = [tuple(n.get_name() for n in c.input_nodes) for c in choices]
    if len(set(nodes)) != 1:
        raise VerifyTimingUnavailable(f"kept choices take different inputs {sorted(set(nodes))}")
    for c in choices:
        if not is_extern(c) and not hasattr(getattr(c, "bmreq", None), "make_run_fn"):
            raise VerifyTimingUnavailable(f"{type(c).__name__} has no run function")


def _extern_view(base, node):
    """What an ATen call sees: `node`'s sizes/strides/offset over the base tensor (a transposed
    weight is a view of the stored one), as Inductor builds extern benchmark inputs."""
    import torch

    sizes = [size_hint(s) for s in node.get_size()]
    strides = [size_hint(s) for s in node.get_stride()]
    offset = size_hint(node.get_layout().offset)
    need = torch._prims_common.compute_required_storage_length(sizes, strides, offset)
    if need > base.untyped_storage().nbytes() // base.element_size():
        raise VerifyTimingUnavailable(f"input {node.get_name()} needs more storage than its base")
    return torch.as_strided(base, sizes, strides, offset)


@dataclass
class Operands:
    """One operand set: templates take base tensors, ATen calls their strided views."""

    bases: list
    views: list
    out: object

    def clone(self, nodes) -> "Operands":
        import torch

        bases = [t.clone() for t in self.bases]
        return Operands(bases, [_extern_view(b, n) for b, n in zip(bases, nodes)], torch.empty_like(self.out))


def _operand_sets(choices, device_type: str) -> list[Operands]:
    """The first set plus copies so that one rotation exceeds twice the L2."""
    from kselect.kernels.timing import rotation_count

    nodes = choices[0].input_nodes
    bases = [benchmark_example(n) for n in nodes]
    first = Operands(bases, [_extern_view(b, n) for b, n in zip(bases, nodes)], benchmark_example(choices[0].layout))
    sets = [first]
    if device_type != "cuda":
        return sets
    import torch

    nbytes = sum(t.untyped_storage().nbytes() for t in (*bases, first.out))
    l2 = torch.cuda.get_device_properties(first.out.device).L2_cache_size
    n = min(rotation_count(nbytes, l2), MAX_SETS, max(1, MAX_ROTATION_BYTES // max(nbytes, 1)))
    sets += [first.clone(nodes) for _ in range(n - 1)]
    return sets


def _runner(choice, ops: Operands):
    """A zero-argument launch of `choice` on these operands (its result lands in `ops.out`)."""
    out = ops.out
    if is_extern(choice):
        fn, inputs = choice.to_callable(), ops.views
        if getattr(choice, "has_out_variant", True):
            return lambda: fn(*inputs, out=out)
        return lambda: out.copy_(fn(*inputs))
    return choice.bmreq.make_run_fn(*ops.bases, out=out)


def measure(
    choices,
    dtype: str,
    device_type: str,
    target_ms: float = 0.5,
    replays: int = 7,
    release_memory: bool = True,
    warm_while_compiling: bool = True,
    compile_in: str = "threads",
) -> Measured:
    """Run, check and time each choice; raises VerifyTimingUnavailable when it cannot.

    The templates compile (template_compiles.Compiles: in threads, or with compile_in="workers"
    in Inductor's compile workers) while the operands are made, the extern choices (ATen,
    the reference) run and (warm_while_compiling) the GPU is kept busy; otherwise it warms for
    WARM_MS just before the timing. `phases_ms` records where the wall time went.
    On CUDA, release_memory gives back what the measurement left in the caching allocator
    (release_gpu_memory); `memory_mb` records the allocator before and after."""
    import torch

    _check_runnable(choices)
    cuda = device_type == "cuda"
    allocated_before = torch.cuda.memory_allocated() if cuda else 0
    released = False
    try:
        got = _measure(choices, dtype, device_type, target_ms, replays, warm_while_compiling, compile_in)
    finally:
        # _measure's operands and graphs went with its frame (after an error its traceback
        # holds them until the caller handles it: that memory is only freed, not emptied)
        if cuda and release_memory:
            released = release_gpu_memory()
    if cuda:
        got.memory_mb = {
            "allocated_before": round(allocated_before / 2**20, 2),
            "allocated_after": round(torch.cuda.memory_allocated() / 2**20, 2),
            "reserved_after": round(torch.cuda.memory_reserved() / 2**20, 2),
            "released": released,
        }
    return got


def release_gpu_memory() -> bool:
    """Free the cuBLAS workspaces and the caching allocator's unused blocks; False (nothing
    done) while a CUDA graph is being captured.

    Why: the measurement runs ATen on its own stream, and torch keeps a cuBLAS workspace per
    (handle, stream) for the process's life, from the caching allocator (32 MiB by default on
    Hopper); the operand copies stay reserved. On the 8-layer prefill every verify process
    started its steps with 31 MiB more allocated and 0.25 GiB more reserved than predict's, and
    replayed identical kernels slower in 8 of 10 pairs (reports/2026-12-04-prefill-gap-process-not-tile; whether this
    memory is the cause is what bench e2e's kselect-verify-keep variant measures). Inductor
    clears the workspaces the same way around CUDA-graph recording
    (torch._inductor.cudagraph_trees); a workspace still needed is made again at the next
    cuBLAS call."""
    import torch

    if torch.cuda.is_current_stream_capturing():
        return False
    torch.cuda.synchronize()
    clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear_workspaces is not None:
        clear_workspaces()
    torch.cuda.empty_cache()
    return True


def _measure(
    choices,
    dtype: str,
    device_type: str,
    target_ms: float,
    replays: int,
    warm_while_compiling: bool = True,
    compile_in: str = "threads",
) -> Measured:
    import torch

    t = [time.perf_counter()]
    phases: dict[str, float] = {}

    def lap(name):
        t.append(time.perf_counter())
        phases[name] = phases.get(name, 0.0) + (t[-1] - t[-2]) * 1e3

    compiles = Compiles(choices, compile_in)
    dropped: dict[int, str] = {}
    cuda = device_type == "cuda"
    # externs (ATen: the reference) first: they need no compile and run while templates compile
    order = sorted(range(len(choices)), key=lambda i: not is_extern(choices[i]))
    results, runners = {}, {}
    try:
        sets = _operand_sets(choices, device_type)
        # Inductor's run functions bind the current stream when made: make them on our side stream.
        stream = torch.cuda.Stream() if cuda else None
        if cuda:
            stream.wait_stream(torch.cuda.current_stream())
        lap("operands")
        waited = False
        with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            for i in order:
                c = choices[i]
                if not waited and not is_extern(c):
                    lap("reference")
                    if cuda and warm_while_compiling:  # else the GPU idles and its clocks drop
                        warm_gpu(WARM_MS, until=compiles.done, duty=WARM_DUTY)
                    dropped.update(compiles.wait())
                    waited = True
                    lap("compile_wait")  # the GPU warm-up included
                if i in dropped:
                    continue
                try:
                    runners[i] = [_runner(c, ops) for ops in sets]
                    sets[0].out.fill_(math.nan)
                    runners[i][0]()
                    if cuda:
                        torch.cuda.synchronize()
                    results[i] = sets[0].out.clone()
                except Exception as exc:  # noqa: BLE001 -- a choice that cannot run is dropped, not picked
                    dropped[i] = f"run failed: {type(exc).__name__}: {str(exc)[:200]}"
                    runners.pop(i, None)
        lap("first_runs")
        got = _judge_and_time(
            choices,
            dtype,
            device_type,
            results,
            runners,
            dropped,
            stream,
            target_ms,
            replays,
            warmed=waited and cuda and warm_while_compiling,
        )
        lap("timing")
        got.compiled_in = compiles.where
        got.compiles = compiles.summary()
        got.phases_ms = phases
        return got
    finally:
        compiles.wait()  # never leave a compile running behind (an early error)
        for c in choices:
            cleanup = getattr(getattr(c, "bmreq", None), "cleanup_run_fn", None)
            if cleanup is not None and not is_extern(c):
                try:
                    cleanup()
                except Exception:  # noqa: BLE001 -- a leak at worst
                    pass


def _judge_and_time(
    choices, dtype, device_type, results, runners, dropped, stream, target_ms, replays, warmed: bool = False
) -> Measured:
    """Drop choices whose result differs from ATen's, time the rest (warming the GPU first
    unless it was kept busy while the templates compiled)."""
    from kselect.kernels.operands import TOLERANCE, relative_error
    from kselect.kernels.timing import time_interleaved

    ref_i = next((i for i in results if _is_aten(choices[i])), None)
    if ref_i is None:
        why = "; ".join(f"{getattr(choices[i], 'name', i)}: {w}" for i, w in dropped.items())
        raise VerifyTimingUnavailable("no ATen choice ran to check the others against" + (f" ({why})" if why else ""))
    for i, got in results.items():
        err = relative_error(got, results[ref_i])
        if not err <= TOLERANCE.get(dtype, 2e-2):
            dropped[i] = f"wrong result (relative error {err:.3g} vs ATen)"
            runners.pop(i, None)
    ms = [math.inf] * len(choices)
    method, stats, rounds = "", {}, {}
    if device_type == "cuda" and runners and not warmed:
        warm_gpu(WARM_MS, duty=WARM_DUTY)
    timed = list(runners)
    if timed:
        per_round = max(1, math.ceil(replays / ROUNDS))
        got = time_interleaved(
            [runners[i] for i in timed],
            rounds=ROUNDS,
            replays=per_round,
            target_ms=target_ms,
            device=device_type,
            stream=stream,
            idle_ratio=IDLE_RATIO if device_type == "cuda" else 0.0,
        )
        method = got.method
        for k, i in enumerate(timed):
            t = got.timing(k)
            ms[i], rounds[i] = t.median_ms, list(got.ms[k])
            stats[i] = {
                "time_min_ms": t.min_ms,
                "time_max_ms": t.max_ms,
                "spread": t.spread,
                "reps": t.reps,
                "noisy": t.noisy,
            }
    for i, why in dropped.items():
        log.warning("kselect verify: dropped %s: %s", getattr(choices[i], "name", i), why)
    return Measured(ms=ms, dropped=dropped, method=method, stats=stats, rounds=rounds, reference=ref_i)
