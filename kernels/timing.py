"""The one GPU timing harness: what a kernel costs inside a compiled program.

Method (see docs/measurement.md): operands rotate over enough copies that every call
reads cold from HBM (the L2 never holds the next call's inputs, like Inductor's L2 flush,
but without timing a flush kernel); R back-to-back calls are captured in one CUDA graph
so Python launch overhead vanishes, as under torch.compile's CUDA graphs; the graph is
replayed G times between CUDA events and the per-call time is the median replay / R.
R is sized from a probe so one replay lasts >= `target_ms`. The GPU is warmed up first
so clocks are up. Spread across replays flags noise.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

DEFAULT_TARGET_MS = 0.25
DEFAULT_REPLAYS = 5
NOISE_SPREAD = 0.05  # (p80 - p20) / median above this flags a measurement as noisy
MAX_CALLS_PER_GRAPH = 256


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    spread: float
    reps: int
    method: str

    @property
    def noisy(self) -> bool:
        return self.spread > NOISE_SPREAD


def rotation_count(bytes_per_set: int, l2_bytes: int, cap: int = 8) -> int:
    """Operand copies needed so the other copies (>= 2x L2) evict each one between uses.

    Capped (default 8) to bound launch overhead per measurement: problems smaller than
    ~L2/4 then run partly L2-warm, as their activations would in a real program.
    """
    if bytes_per_set <= 0:
        return 1
    return int(min(cap, 1 + math.ceil(2 * max(l2_bytes, 1) / bytes_per_set)))


def _quantiles(xs: Sequence[float]) -> tuple[float, float, float]:
    s = sorted(xs)
    q = statistics.quantiles(s, n=5, method="inclusive") if len(s) >= 2 else [s[0]] * 4
    return q[0], statistics.median(s), q[-1]


def warm_gpu(ms: float = 200.0, until: Callable[[], bool] | None = None) -> None:
    """Run matrix work for ~`ms` so clocks leave their idle state before timing; with `until`,
    also for as long as it returns False (keep the GPU busy while kernels compile)."""
    import time

    import torch

    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end or (until is not None and not until()):
        for _ in range(10):
            x @ x
        torch.cuda.synchronize()


def _time_on_host(runners, target_ms: float, replays: int) -> Timing:
    """CPU kernels: wall-clock batches (no graphs, no events); same statistics."""
    import time

    n = len(runners)
    for r in runners[: min(n, 3)]:
        r()
    t0 = time.perf_counter()
    runners[0]()
    probe = (time.perf_counter() - t0) * 1e3
    calls = int(min(MAX_CALLS_PER_GRAPH, max(1, math.ceil(target_ms / max(probe, 1e-4)))))
    times = []
    for _ in range(replays):
        t0 = time.perf_counter()
        for i in range(calls):
            runners[i % n]()
        times.append((time.perf_counter() - t0) * 1e3 / calls)
    lo, med, hi = _quantiles(times)
    return Timing(med, min(times), max(times), (hi - lo) / med if med > 0 else 0.0, calls * replays, "cpu_wall")


def time_runners(
    runners: Sequence[Callable[[], object]],
    *,
    target_ms: float = DEFAULT_TARGET_MS,
    replays: int = DEFAULT_REPLAYS,
    use_graph: bool = True,
    max_total_ms: float | None = None,
    device: str = "cuda",
    stream=None,
) -> Timing:
    """Time one kernel given one zero-arg runner per rotating operand set.

    Runners must already be compiled and verified. `max_total_ms` bounds the time spent
    on a slow candidate (fewer replays, never fewer than 3). On `device="cpu"` it falls
    back to host wall-clock timing (for CPU backends and tests). `stream`: the side stream
    to run on (a runner bound to a stream when it was made, e.g. Inductor's, needs its own).
    """
    n = len(runners)
    if n == 0:
        raise ValueError("time_runners needs at least one runner")
    if device == "cpu":
        return _time_on_host(runners, target_ms, replays)
    import torch

    if stream is None:
        stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        # Probe: a few rotating calls (warms caches of the launcher, not the L2).
        for r in runners[: min(n, 3)]:
            r()
        start.record(stream)
        for i in range(3):
            runners[i % n]()
        end.record(stream)
    end.synchronize()
    probe = start.elapsed_time(end) / 3
    calls = int(min(MAX_CALLS_PER_GRAPH, max(1, math.ceil(target_ms / max(probe, 1e-4)))))
    if n > 1 and calls < n and probe * n < 4 * target_ms:
        calls = n  # one full rotation when it is cheap
    if max_total_ms is not None:
        replays = int(max(3, min(replays, max_total_ms // max(probe * calls, 1e-6))))

    if use_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(calls):
                runners[i % n]()
        body = graph.replay
        method = "cuda_graph"
    else:

        def body():
            for i in range(calls):
                runners[i % n]()

        method = "events"
    times = []
    with torch.cuda.stream(stream):
        body()  # warm replay
        for _ in range(replays):
            start.record(stream)
            body()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) / calls)
    torch.cuda.current_stream().wait_stream(stream)
    lo, med, hi = _quantiles(times)
    return Timing(
        median_ms=med,
        min_ms=min(times),
        max_ms=max(times),
        spread=(hi - lo) / med if med > 0 else 0.0,
        reps=calls * replays,
        method=method,
    )
