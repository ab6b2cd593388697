"""How the end-to-end bench times a step: synchronised wall-clock calls, the steady state after a
warm-up, the step's GPU time alone as a CUDA-graph replay, and its kernels by kind. The worker
(e2e_worker.py) runs them; they hold no state and know nothing of the variant being timed."""

from __future__ import annotations

import statistics
import time

from kselect.training.bench.gpu_state import StateSampler


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_call(fn, device):
    """(result, wall seconds) of one synchronised call."""
    _sync(device)
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - t0


def steady_state(fn, device, steps: int, warmup: int, warmup_s: float = 0.0, snapshot=None) -> dict:
    """Median (and spread) of `steps` synchronised calls after `warmup` untimed ones, and more
    untimed ones until `warmup_s` seconds have passed; `snapshot()` (e.g. the GPU's state) is
    read once warm, into "after_warmup".

    Why the seconds: a process's first steps run on a GPU in the state its compile left.
    Verify's measurement ends its compile, and on the H200's power-limited 8-layer prefill
    verify replayed identical kernels ~0.4 % slower than predict, though they were no slower in
    a profile a second later (reports/2026-12-04-prefill-gap-process-not-tile). A fixed time of work lets every
    variant's GPU settle alike."""
    t0, ran = time.perf_counter(), 0
    while ran < warmup or time.perf_counter() - t0 < warmup_s:
        timed_call(fn, device)
        ran += 1
    warmed = {"warmup": warmup, "warmup_calls": ran, "warmup_s": round(time.perf_counter() - t0, 3)}
    if snapshot is not None:
        warmed["after_warmup"] = snapshot()
    times = [timed_call(fn, device)[1] * 1e3 for _ in range(steps)]
    s = sorted(times)
    q = statistics.quantiles(s, n=10, method="inclusive") if len(s) >= 2 else [s[0]] * 9
    return {
        "step_ms": statistics.median(s),
        "step_ms_min": s[0],
        "step_ms_p10": q[0],
        "step_ms_p90": q[-1],
        "steps": steps,
        **warmed,
    }


def graph_replay_ms(fn, device, replays: int = 20, profile_steps: int = 0) -> dict | None:
    """The step's GPU time alone: `fn` captured once in a CUDA graph, replayed `replays` times.

    Why: decode steps are launch-bound (no CUDA graphs in any variant), so a step time mixes
    kernel time with the host's launch overhead; a variant with fewer, fused kernels can win
    on the host side only. Measured after the step timing, on CUDA; a step that cannot be
    captured records why instead (None on the CPU). The GPU's clock, power and temperature are
    sampled while the replays run, and its energy counter with them (`during_replays`,
    gpu_state.StateSampler; energy per step only where the counter moved twice or more). With
    `profile_steps`, that many more replays run under torch.profiler (`graph_kernel_time`):
    the kernels as the graph runs them, so a replay slower on the same kernel list shows
    whether its kernels or the gaps between them took the time."""
    import torch

    if device.type != "cuda":
        return None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        torch.cuda.synchronize()
        times = []
        with StateSampler(device) as state:
            for _ in range(replays):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
        out = {"graph_step_ms": statistics.median(times), "graph_replays": replays}
        during = state.summary()
        if during:
            if "counter_power_mw" in during:  # the replays' energy per step, the time figure's twin
                wall_ms_per_replay = during["window_ms"] / replays
                during["energy_mj_per_step"] = round(during["counter_power_mw"] * wall_ms_per_replay / 1e3, 2)
            out["during_replays"] = during
    except Exception as exc:  # noqa: BLE001 -- an extra measurement; the row keeps its step time
        return {"graph_error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    if profile_steps > 0:
        out["graph_kernel_time"] = kernel_profile(graph.replay, device, profile_steps)
    return out


def kernel_profile(fn, device, steps: int) -> dict:
    """`steps` calls of `fn` profiled by kind (training/bench/kernel_time.py); an extra measurement,
    so a failure comes back as {"error": why} for the row, and the run stays ok."""
    from kselect.training.bench.kernel_time import profile_kernels

    try:
        return profile_kernels(fn, device, steps=steps)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
