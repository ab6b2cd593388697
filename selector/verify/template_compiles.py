"""Verify's kept templates compiling in the background while the measurement makes operands,
runs ATen and keeps the GPU warm, each compile timed so that the record says where the wait went.

Two places to compile (`COMPILE_IN`):
- "threads" (the default): threads of this process, as Inductor's own precompile does without
  workers. On the H200's one-layer decode (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3) lm_head's four tiles
  started together and each thread ran on a CPU for only 38-71 % of its wall time: 1.5-1.7 of
  the four ran at once on a 16-core host. Part of the rest is each tile's ptxas (a child
  process); bare Triton holds the GIL only in its Python front end (dev-cpu there).
- "workers": Inductor's compile-worker processes, as stock max-autotune precompiles its Triton
  templates, then a load here from Triton's cache (`choice.precompile()` hits it). Processes
  do not share a GIL. The H200 runs of reports/2026-12-03-verify-measurement-8-layer-model-fp32-check read them slower for these 1-4 templates (1.26-1.32 s
  for four), with workers that had compiled nothing yet; whether warm workers win is what
  bench e2e's `kselect-verify-workers` variant measures (reports/device/plan.md). A choice that
  cannot go to a worker (not a GPU Triton template, no pool up yet, a failed submission) is
  compiled in a thread, and a worker's failure is retried in one: the compile error that
  counts is this process's own.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from kselect.selector.compat.choice_candidates import is_extern
from kselect.selector.config import COMPILE_IN

log = logging.getLogger("kselect.selector")

MAX_THREADS = 8

# submit(choice) -> a future that is done when a worker has compiled the choice, or None
Submit = Callable[[object], "Future | None"]


def inductor_worker_submit() -> Submit | None:
    """A submit function over Inductor's compile-worker pool, or None where none is up (one
    compile thread, the pool still starting, a torch without this API)."""
    from kselect.selector.compat import compile_pool

    try:
        if compile_pool.compile_worker_pool() is None:
            return None
    except Exception as exc:  # noqa: BLE001 -- another torch: the threads compile everything
        log.debug("kselect verify: no compile-worker pool (%s); compiling in threads", exc)
        return None

    def submit(choice) -> Future | None:
        bmreq = getattr(choice, "bmreq", None)
        if type(bmreq).__name__ != "TritonGPUBenchmarkRequest":
            return None
        with open(bmreq.module_path) as f:
            return compile_pool.submit_triton_compile(bmreq.kernel_name, f.read())

    return submit


def _children_cpu_s() -> float:
    """CPU seconds of this process's ended and waited-for children (0 where the OS has no
    such count)."""
    try:
        import resource
    except ImportError:  # not on every OS
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Compiles:
    """The kept templates of one measured set compiling (they start at once; `wait()` before
    running one). `where` says where they compiled: threads, workers, mixed (some each) or
    none (nothing to compile)."""

    def __init__(self, choices, compile_in: str = "threads", submit: Submit | None = None):
        if compile_in not in COMPILE_IN:
            raise ValueError(f"compile_in must be one of {COMPILE_IN}, got {compile_in!r}")
        self.todo = [i for i, c in enumerate(choices) if not is_extern(c) and hasattr(c, "precompile")]
        self.failed: dict[int, str] = {}
        self.timings: dict[int, dict] = {}
        self._t0 = time.perf_counter()
        self._children_cpu0 = _children_cpu_s()
        self._children_cpu_ms: float | None = None
        self._span_ms: float | None = None
        in_workers = self._submit_to_workers(choices, compile_in, submit)
        n = len(in_workers)
        self.where = "none" if not self.todo else "threads" if n == 0 else "workers" if n == len(self.todo) else "mixed"
        self._pool = ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(self.todo))) if self.todo else None
        self._futures = {
            i: self._pool.submit(self._timed, i, choices[i].precompile, in_workers.get(i)) for i in self.todo
        }

    def _submit_to_workers(self, choices, compile_in: str, submit: Submit | None) -> dict[int, Future]:
        if compile_in != "workers" or not self.todo:
            return {}
        submit = submit or inductor_worker_submit()
        if submit is None:
            return {}
        got = {}
        for i in self.todo:
            try:
                fut = submit(choices[i])
            except Exception as exc:  # noqa: BLE001 -- it compiles in a thread instead
                log.debug("kselect verify: worker compile of choice %d not submitted: %s", i, exc)
                fut = None
            if fut is not None:
                got[i] = fut
        return got

    def _timed(self, i: int, precompile, in_worker: Future | None) -> None:
        """Compile one choice (after its worker, if it has one), noting when it started, its wall
        time and its own thread's CPU time: compiles that take far more wall than CPU time
        waited (on the GIL, a child or a worker); `worker_ms`, until the worker was done."""
        start, cpu = time.perf_counter(), time.thread_time()
        worker_ms = None
        try:
            if in_worker is not None:
                try:
                    in_worker.result()
                except Exception as exc:  # noqa: BLE001 -- a worker's fault: compile here, report here
                    log.debug("kselect verify: worker compile of choice %d failed (%s); compiling here", i, exc)
                worker_ms = round((time.perf_counter() - start) * 1e3, 3)
            precompile()  # after a worker: a load from Triton's cache
        finally:
            end = time.perf_counter()
            self.timings[i] = {
                "start_ms": round((start - self._t0) * 1e3, 3),
                "wall_ms": round((end - start) * 1e3, 3),
                "cpu_ms": round((time.thread_time() - cpu) * 1e3, 3),
            }
            if worker_ms is not None:
                self.timings[i]["worker_ms"] = worker_ms

    def done(self) -> bool:
        return all(f.done() for f in self._futures.values())

    def wait(self) -> dict[int, str]:
        """Block until every compile ended; {index: why it failed}. Idempotent."""
        if self._pool is not None:
            for i, fut in self._futures.items():
                exc = fut.exception()
                if exc is not None:
                    self.failed[i] = f"compile failed: {type(exc).__name__}: {str(exc)[:200]}"
            self._pool.shutdown(wait=True)
            self._pool = None
            self._span_ms = round((time.perf_counter() - self._t0) * 1e3, 3)
            self._children_cpu_ms = round((_children_cpu_s() - self._children_cpu0) * 1e3, 3)
        return dict(self.failed)

    def summary(self) -> dict:
        """Where the compiles' time went, once waited for: per kept index its start, wall and
        thread CPU ms (and worker ms where a worker compiled it); the span from the first start
        to the last end; the CPU time of child processes that ended meanwhile (ptxas, in
        threads; a worker's is its own); and where they compiled. Empty when nothing compiled."""
        if not self.todo or self._span_ms is None:
            return {}
        return {
            "per_choice": {i: dict(self.timings[i]) for i in sorted(self.timings)},
            "span_ms": self._span_ms,
            "children_cpu_ms": self._children_cpu_ms,
            "where": self.where,
        }
