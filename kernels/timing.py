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
import time
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


def warm_gpu(ms: float = 200.0, until: Callable[[], bool] | None = None, duty: float = 1.0) -> None:
    """Run matrix work for ~`ms` so clocks leave their idle state before timing; with `until`,
    also for as long as it returns False (keep the GPU busy while kernels compile).

    `duty` < 1 idles the GPU for the rest of the time after each GEMM: clocks stay up without the
    sustained full-power load that trips the card's software power cap (an H100 then runs at
    ~1605 instead of 1980 MHz, and whatever is timed next reads slow:
    reports/2026-12-06-verify-aten-reading)."""
    import torch

    if not 0 < duty <= 1:
        raise ValueError(f"warm_gpu duty must be in (0, 1], got {duty}")
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end or (until is not None and not until()):
        t0 = time.perf_counter()
        for _ in range(10 if duty >= 1 else 1):
            x @ x
        torch.cuda.synchronize()
        if duty < 1:
            time.sleep((time.perf_counter() - t0) * (1 - duty) / duty)


class _HostTimer:
    """CPU kernels: wall-clock batches (no graphs, no events); the same statistics."""

    method = "cpu_wall"

    def __init__(self, runners, target_ms: float):

        n = len(runners)
        for r in runners[: min(n, 3)]:
            r()
        t0 = time.perf_counter()
        runners[0]()
        probe = (time.perf_counter() - t0) * 1e3
        self.runners = runners
        self.calls = int(min(MAX_CALLS_PER_GRAPH, max(1, math.ceil(target_ms / max(probe, 1e-4)))))

    def read(self, replays: int) -> list[float]:

        n, times = len(self.runners), []
        for _ in range(replays):
            t0 = time.perf_counter()
            for i in range(self.calls):
                self.runners[i % n]()
            times.append((time.perf_counter() - t0) * 1e3 / self.calls)
        return times


class _GpuTimer:
    """R rotating calls captured once in a CUDA graph (or launched per replay); `read` replays it
    between CUDA events and returns per-call times. Made once, read as often as wanted: verify's
    interleaved rounds replay the same capture."""

    def __init__(self, runners, target_ms: float, use_graph: bool, stream):
        import torch

        n = len(runners)
        self.stream = stream if stream is not None else torch.cuda.Stream()
        self.stream.wait_stream(torch.cuda.current_stream())
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            # Probe: a few rotating calls (warms caches of the launcher, not the L2).
            for r in runners[: min(n, 3)]:
                r()
            self.start.record(self.stream)
            for i in range(3):
                runners[i % n]()
            self.end.record(self.stream)
        self.end.synchronize()
        self.probe_ms = self.start.elapsed_time(self.end) / 3
        calls = int(min(MAX_CALLS_PER_GRAPH, max(1, math.ceil(target_ms / max(self.probe_ms, 1e-4)))))
        if n > 1 and calls < n and self.probe_ms * n < 4 * target_ms:
            calls = n  # one full rotation when it is cheap
        self.calls = calls
        if use_graph:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=self.stream):
                for i in range(calls):
                    runners[i % n]()
            self.body, self.method = graph.replay, "cuda_graph"
        else:

            def body():
                for i in range(calls):
                    runners[i % n]()

            self.body, self.method = body, "events"
        self.warm = False

    def read(self, replays: int) -> list[float]:
        import torch

        times = []
        with torch.cuda.stream(self.stream):
            if not self.warm:
                self.body()  # warm replay
                self.warm = True
            for _ in range(replays):
                self.start.record(self.stream)
                self.body()
                self.end.record(self.stream)
                self.end.synchronize()
                times.append(self.start.elapsed_time(self.end) / self.calls)
        torch.cuda.current_stream().wait_stream(self.stream)
        return times


def _timer(runners, target_ms: float, device: str, use_graph: bool = True, stream=None):
    if len(runners) == 0:
        raise ValueError("time_runners needs at least one runner")
    if device == "cpu":
        return _HostTimer(runners, target_ms)
    return _GpuTimer(runners, target_ms, use_graph, stream)


def _timing(times: Sequence[float], reps: int, method: str) -> Timing:
    lo, med, hi = _quantiles(times)
    return Timing(
        median_ms=med,
        min_ms=min(times),
        max_ms=max(times),
        spread=(hi - lo) / med if med > 0 else 0.0,
        reps=reps,
        method=method,
    )


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
    timer = _timer(runners, target_ms, device, use_graph, stream)
    if max_total_ms is not None and device != "cpu":
        replays = int(max(3, min(replays, max_total_ms // max(timer.probe_ms * timer.calls, 1e-6))))
    return _timing(timer.read(replays), timer.calls * replays, timer.method)


@dataclass(frozen=True)
class Rounds:
    """Several kernels read in interleaved rounds: `ms[k][r]` is kernel k's median per-call time
    in round r (each round reads every kernel once, in alternating order)."""

    ms: list[list[float]]
    method: str
    reps: int

    def timing(self, k: int) -> Timing:
        """Kernel k over its rounds: the median of its round medians; spread = (max - min) / median."""
        xs = self.ms[k]
        med = statistics.median(xs)
        return Timing(med, min(xs), max(xs), (max(xs) - min(xs)) / med if med > 0 else 0.0, self.reps, self.method)


def time_interleaved(
    runner_sets: Sequence[Sequence[Callable[[], object]]],
    *,
    rounds: int = 3,
    replays: int = 3,
    target_ms: float = DEFAULT_TARGET_MS,
    device: str = "cuda",
    stream=None,
    idle_ratio: float = 0.0,
) -> Rounds:
    """Read several kernels (one runner list each) in `rounds` interleaved rounds.

    Each kernel is captured once; round r replays every capture `replays` times, forwards in
    even rounds and backwards in odd ones, so clock drift and the GPU's state after the
    previous kernel fall on every kernel alike. Comparing two kernels round by round (a
    paired ratio) cancels what changed between rounds. `idle_ratio` > 0 idles the GPU after each
    read for that multiple of the read's own time, so back-to-back reads of large GEMMs do not
    hold the card at its power cap."""
    if rounds < 1 or replays < 1:
        raise ValueError(f"time_interleaved needs rounds >= 1 and replays >= 1, got {rounds}, {replays}")
    timers = [_timer(rs, target_ms, device, True, stream) for rs in runner_sets]
    ms: list[list[float]] = [[] for _ in timers]
    for r in range(rounds):
        order = range(len(timers)) if r % 2 == 0 else reversed(range(len(timers)))
        for k in order:
            t0 = time.perf_counter()
            ms[k].append(statistics.median(timers[k].read(replays)))
            if idle_ratio > 0:
                time.sleep((time.perf_counter() - t0) * idle_ratio)
    method = timers[0].method if timers else ""
    return Rounds(ms=ms, method=method, reps=rounds * replays)
