"""compile_in="workers": the compile workers are warmed once, as soon as their pool is up
(selector/worker_warmup.py), and the warm-up is installed and removed with the selector."""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

pytest.importorskip("torch")

from kselect.selector.worker_warmup import WorkerWarmup  # noqa: E402


def _warm(seconds: float) -> dict:
    """A worker's warm-up: some CPU work in its own process, reported as _warm_worker does."""
    t0 = time.perf_counter()
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return {"pid": os.getpid(), "ms": (time.perf_counter() - t0) * 1e3}


def _broken(seconds: float) -> dict:
    raise RuntimeError("no Triton in this worker")


@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as p:
        p.submit(_warm, 0.0).result()   # up, as Inductor's pool is once use_process_pool() says so
        yield p


def test_warm_up_waits_for_the_pool_then_submits_one_per_worker_once(pool):
    up = []
    warmup = WorkerWarmup(ready=lambda: (pool, 2, (0.2,)) if up else None, job=_warm)
    assert warmup.start() is False and not warmup.started and warmup.summary() == {}
    up.append(True)
    assert warmup.start("a Dynamo callback's argument") is True and warmup.started
    assert warmup.start() is False   # once per selector: every later compile start does nothing
    deadline = time.monotonic() + 60
    while warmup.summary()["done"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = warmup.summary()
    assert (got["jobs"], got["done"], got["failed"]) == (2, 2, 0)
    assert got["workers"] in (1, 2) and got["median_ms"] >= 190 and got["last_done_ms"] >= got["median_ms"]


def test_a_failed_warm_up_is_counted_and_a_broken_pool_stops_it(pool):
    failing = WorkerWarmup(ready=lambda: (pool, 2, (0.0,)), job=_broken)
    assert failing.start() is True
    deadline = time.monotonic() + 60
    while failing.summary()["failed"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failing.summary()["failed"] == 2 and failing.summary()["done"] == 0

    def no_pool():
        raise RuntimeError("compile workers disabled")

    broken = WorkerWarmup(ready=no_pool)
    assert broken.start() is False and broken.summary() == {"error": "RuntimeError: compile workers disabled"}
    assert broken.start() is False   # not retried at every compile start


def test_workers_mode_installs_the_warm_up_at_each_compile_start_and_disable_removes_it():
    """enable(compile_in="workers") hooks the warm-up into Dynamo's compile-start callbacks (on
    this CPU there is no GPU Triton pool, so it submits nothing and the compile is stock's);
    disable() unhooks it; threads mode hooks nothing."""
    import torch
    from torch._dynamo.callback import callback_handler

    from kselect.selector import inductor as ksi

    before = list(callback_handler.start_callbacks)
    try:
        sel = ksi.enable("verify", compile_in="workers")
        assert sel.worker_warmup is not None and sel.worker_warmup.start in callback_handler.start_callbacks
        torch._dynamo.reset()
        got = torch.compile(lambda x: (x * 2).sum())(torch.ones(8))
        assert got.item() == 16.0 and not sel.worker_warmup.started   # no GPU pool here: nothing sent
    finally:
        ksi.disable()
    assert callback_handler.start_callbacks == before
    try:
        assert ksi.enable("verify").worker_warmup is None and callback_handler.start_callbacks == before
        assert ksi.enable("predict", compile_in="workers").worker_warmup is None   # predict measures nothing
    finally:
        ksi.disable()
