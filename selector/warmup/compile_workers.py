"""Warm Inductor's compile workers: one small Triton GEMM compile in each, submitted as a compile
starts (selector/warmup/triton_setup.py), so that the graph's kernels and verify's templates later find
workers that have imported Triton and Inductor's runtime and initialised Triton's backend.

Why: a worker's first Triton compile pays that setup. On this project's 2-core dev machine
(Triton 3.6, an sm_90 target, reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/dev-cpu) importing Triton took 0.12 s and
the first compile 0.64 s against 0.51 s for the next; four cold processes compiled lm_head's four
tiles in 2.47 s, four warm ones in 1.28 s. In a one-layer compile nothing reaches the workers
before lowering ends, so the first kernels meet cold workers. The warm-up runs in the workers,
not in the compiling process, and costs it no wall time.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger("kselect.selector")


def _warm_worker(target) -> dict:
    """In a compile worker: what its first template compile would otherwise pay. Returns the
    worker's pid and the milliseconds it took (a pid seen twice: a worker warmed twice)."""
    import importlib

    t0 = time.perf_counter()
    for module in ("torch._inductor.runtime.compile_tasks", "torch._inductor.runtime.triton_heuristics"):
        importlib.import_module(module)  # what Inductor's worker-side template compile imports
    import triton

    from kselect.kernels.triton.cross_compile import WARM_UP_PLAN, plan_source

    plan = WARM_UP_PLAN  # a 16x16x16 one-warp GEMM tile, as the compile-cost collector's children warm
    triton.compile(
        plan_source(plan), target=target, options={"num_warps": plan.num_warps, "num_stages": plan.num_stages}
    )
    return {"pid": os.getpid(), "ms": round((time.perf_counter() - t0) * 1e3, 3)}


class WorkerWarmup:
    """Once per selector: submit one warm-up per compile worker as soon as the pool is up
    (`start()` does nothing after the first submission or while no pool is up). Failures only
    cost the warm-up.

    `ready()` gives (pool, jobs, the job's arguments) or None (WarmStart gives Inductor's pool
    and Triton's target; tests a process pool of their own); `job` defaults to `_warm_worker`."""

    def __init__(self, ready, job=None):
        self._ready = ready
        self._job = job or _warm_worker
        self._lock = threading.Lock()
        self._futures: list = []
        self._t0: float | None = None
        self._done_at: dict[int, float] = {}
        self.error: str | None = None

    @property
    def started(self) -> bool:
        return self._t0 is not None

    def start(self, *_callback_args) -> bool:
        """Submit the warm-ups if the pool is up and they are not yet submitted; True if this
        call submitted them. Takes (and ignores) a Dynamo start callback's argument."""
        with self._lock:
            if self._t0 is not None or self.error is not None:
                return False
            try:  # it runs inside the user's compile: nothing may escape
                got = self._ready()
                if got is None:
                    return False
                pool, jobs, args = got
                self._t0 = time.perf_counter()
                for i in range(jobs):
                    fut = pool.submit(self._job, *args)
                    fut.add_done_callback(lambda _f, i=i: self._done_at.setdefault(i, time.perf_counter()))
                    self._futures.append(fut)
            except Exception as exc:  # noqa: BLE001 -- no warm-up: the templates pay the cold start
                self.error = f"{type(exc).__name__}: {str(exc)[:200]}"
                log.debug("kselect: compile-worker warm-up not submitted: %s", self.error)
                return False
            return True

    def summary(self) -> dict:
        """Jobs submitted, done, failed; the distinct workers they reached; the median worker
        time and when the last one ended (ms after submission). Empty before any submission."""
        if self._t0 is None:
            return {"error": self.error} if self.error else {}
        results, failed = [], 0
        for fut in self._futures:
            if not fut.done():
                continue
            try:
                results.append(fut.result())
            except Exception:  # noqa: BLE001 -- counted, not raised
                failed += 1
        ms = sorted(r["ms"] for r in results)
        ended = list(self._done_at.values())  # one copy: the pool's thread may still add to it
        return {
            **({"error": self.error} if self.error else {}),
            "jobs": len(self._futures),
            "done": len(results),
            "failed": failed,
            "workers": len({r["pid"] for r in results}),
            "median_ms": ms[len(ms) // 2] if ms else None,
            "last_done_ms": round((max(ended) - self._t0) * 1e3, 3) if ended else None,
        }
