"""The functions the selector tests run in processes they spawn (a decision-cache writer, compile
and warm-up stand-ins). A spawned process imports the module its function is defined in before it
runs it: a test module imports torch and much of kselect (~2 s of CPU on the test machine's
cores, in every such process), this one nothing but the standard library and, inside the writer,
the decision cache."""

from __future__ import annotations

import os
import time


def write_decisions(root: str, i: int) -> None:
    """Writer `i`: 50 decisions under one key of the decision cache at `root`."""
    from kselect.selector.decide.cache import DecisionCache

    cache = DecisionCache(root)
    for j in range(50):
        cache.put("samekey", [f"cand{i}-{j}"])


def burn(seconds: float) -> float:
    """A worker's compile: CPU work in a process of its own."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def fail() -> None:
    raise RuntimeError("worker lost")


def warm(seconds: float) -> dict:
    """A worker's warm-up: some CPU work in its own process, reported as _warm_worker does."""
    t0 = time.perf_counter()
    burn(seconds)
    return {"pid": os.getpid(), "ms": (time.perf_counter() - t0) * 1e3}


def broken_warm_up(seconds: float) -> dict:
    raise RuntimeError("no Triton in this worker")


def warm_for(target: str) -> dict:
    """A worker's warm-up that needs the target the background set-up found."""
    if target != "sm-test":
        raise ValueError(f"warmed for {target!r}")
    return warm(0.05)
