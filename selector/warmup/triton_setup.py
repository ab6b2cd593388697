"""The compile's one-time Triton set-up, begun in the background as the first compile starts,
so that the compiling thread does not wait for it later.

Why (the one-layer Llama-3-8B decode on the H200, a cold process and cold caches):
- The first Triton template or kernel of a process asks Triton for the GPU target
  (`torch.utils._triton.triton_hash_with_backend`). With a cold Triton cache that builds Triton's
  CUDA utilities with the C compiler: 0.34 s on the compiling thread (cProfile,
  reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k call1; `CudaUtils.__init__` -> `compile_module_from_src` -> `_build`).
  Plain torch.compile pays it in code generation, verify at its first kept template, during
  lowering. The build is a child process: a background thread waits for it without holding
  the GIL while Dynamo and AOTAutograd trace on the compiling thread.
- Inductor's compile workers pay their first Triton compile's set-up (imports, the backend) on
  the graph's first kernels. With the workers warmed as the compile started, the decode graph's
  wait for its kernels (`async_compile.wait`) was 0.36-0.52 s against 0.63-0.83 s without
  (verify-workers vs verify, 4 processes each, reports/2026-12-05-decode-compile-test-prefill-steady-state s2).

Once per selector, on CUDA only (CUDA already initialised: a CPU compile never starts it),
and every failure costs only the set-up it would have saved: the compile then does it itself.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kselect.selector.warmup.compile_workers import WorkerWarmup

log = logging.getLogger("kselect.selector")


def cuda_triton_in_use() -> bool:
    """Triton is installed and this process already uses CUDA (the compile is a GPU compile,
    or will be: asking must not initialise CUDA for a CPU compile)."""
    import importlib.util

    import torch

    return torch.cuda.is_initialized() and torch.version.hip is None and importlib.util.find_spec("triton") is not None


def prepare_triton():
    """Triton's GPU target and Inductor's Triton hash, both cached for the process: what
    Inductor's first Triton template or kernel otherwise computes on the compiling thread."""
    from triton.runtime import driver

    target = driver.active.get_current_target()  # cold Triton cache: builds its CUDA utilities
    try:
        from torch.utils._triton import triton_hash_with_backend
    except ImportError:  # another torch: the target is the part that costs
        return target
    triton_hash_with_backend()
    return target


class WarmStart:
    """`start()` is a Dynamo compile-start callback (also called as a last chance at the first
    GEMM decision): the first call that finds CUDA in use starts one background thread that
    prepares Triton, then warms Inductor's compile workers (when `warm_workers` and their pool is
    up). Later calls only retry the workers' warm-up when the pool was not up before.

    `gate`, `prepare` and `pool` are Inductor and Triton by default; tests pass their own."""

    def __init__(
        self,
        warm_workers: bool = True,
        gate: Callable[[], bool] | None = None,
        prepare: Callable[[], object] | None = None,
        pool: Callable[[], object] | None = None,
        job=None,
    ):
        self.warm_workers = bool(warm_workers)
        self._gate = gate or cuda_triton_in_use
        self._prepare = prepare or prepare_triton
        self._pool = pool or _inductor_pool
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.target = None
        self.prepare_ms: float | None = None
        self.error: str | None = None
        self.workers = WorkerWarmup(ready=self._workers_ready, job=job)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, *_callback_args) -> bool:
        """Start the background set-up if not yet started and CUDA is in use; True if this call
        started it. Takes (and ignores) a Dynamo start callback's argument. Never raises."""
        with self._lock:
            if self._thread is not None:
                if self.warm_workers and self.target is not None:
                    self.workers.start()  # a pool that came up after the set-up ended
                return False
            try:
                if not self._gate():
                    return False
                device = _current_device()
                if self.warm_workers:
                    self._pool()  # on this thread: Inductor creates its pool here, never twice
            except Exception as exc:  # noqa: BLE001 -- inside the user's compile: nothing may escape
                self.error = f"{type(exc).__name__}: {str(exc)[:200]}"
                log.debug("kselect: warm start not begun: %s", self.error)
                return False
            self._thread = threading.Thread(target=self._run, args=(device,), name="kselect-warm-start", daemon=True)
            self._thread.start()
            return True

    def _run(self, device) -> None:
        t0 = time.perf_counter()
        try:
            if device is not None:
                import torch

                torch.cuda.set_device(device)  # this thread's own current device
            self.target = self._prepare()
        except Exception as exc:  # noqa: BLE001 -- the compile prepares Triton itself
            self.error = f"{type(exc).__name__}: {str(exc)[:200]}"
            log.debug("kselect: Triton set-up in the background failed: %s", self.error)
            return
        finally:
            self.prepare_ms = round((time.perf_counter() - t0) * 1e3, 3)
        if self.warm_workers:
            self.workers.start()

    def _workers_ready(self):
        """(pool, jobs, the warm-up's arguments) once the set-up gave a target and the pool is
        up; else None (WorkerWarmup retries at the next start)."""
        if self.target is None:
            return None
        got = self._pool()
        if got is None:
            return None
        pool, size = got
        return pool, size, (self.target,)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the background set-up (tests, and a caller about to read `summary()`)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def summary(self) -> dict:
        """What the warm start did: whether it began, the set-up's ms (None while it runs), its
        error, and the workers' warm-up (WorkerWarmup.summary). Empty before it began."""
        if self._thread is None:
            return {"error": self.error} if self.error else {}
        return {
            **({"error": self.error} if self.error else {}),
            "prepare_ms": self.prepare_ms,
            "target": str(self.target) if self.target is not None else None,
            "workers": self.workers.summary() if self.warm_workers else None,
        }


def _current_device():
    import torch

    return torch.cuda.current_device() if torch.cuda.is_initialized() else None


def _inductor_pool():
    """(Inductor's compile-worker pool, its size) once it takes work, else None."""
    from kselect.selector.compat import compile_pool

    return compile_pool.compile_worker_pool()
