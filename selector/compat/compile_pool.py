"""Inductor's compile-worker pool (`torch._inductor.async_compile`): waiting until it takes work,
and handing it a Triton kernel's source to compile."""

from __future__ import annotations


def warm_compile_pool(timeout_s: float = 120.0) -> float | None:
    """Start Inductor's compile-worker pool and wait until it takes work; seconds taken, or None
    where this torch has no such pool (one compile thread, no Triton, an unknown API).

    torch.compile starts the pool in the background as it begins, and until the workers are
    up Inductor compiles kernels in the compiling process itself; how much of a compile falls
    before that moment differs from process to process. A benchmark that waits for the pool
    first compares the compiles without that race (the wait is reported apart)."""
    import time

    try:
        from torch._inductor.async_compile import AsyncCompile, maybe_warm_pool
    except ImportError:
        return None
    t0 = time.perf_counter()
    maybe_warm_pool()
    if not AsyncCompile.use_process_pool() and getattr(AsyncCompile, "_ready_future", None) is None:
        return None  # no process pool here: kernels compile in this process anyway
    future = getattr(AsyncCompile, "_ready_future", None)
    if future is not None:
        future.result(timeout=timeout_s)
    return time.perf_counter() - t0


def compile_worker_pool():
    """(Inductor's compile-worker pool, its number of workers) once the pool takes work, else
    None (one compile thread, the pool still starting, a torch without this API). Asking
    starts the pool where Inductor would use one, as Inductor's own check does."""
    from torch._inductor import async_compile, config

    if not async_compile.AsyncCompile.use_process_pool():
        return None
    size = getattr(async_compile, "get_compile_threads", None)
    return async_compile.AsyncCompile.process_pool(), int(size()) if size else int(config.compile_threads or 1)


def submit_triton_compile(kernel_name: str, source_code: str):
    """Compile a Triton kernel module's source in Inductor's compile workers, as stock
    max-autotune precompiles its templates; a future done once the kernel is in Triton's cache
    (None: Inductor already held it compiled)."""
    from torch._inductor.async_compile import AsyncCompile

    return getattr(AsyncCompile().triton(kernel_name=kernel_name, source_code=source_code), "future", None)
