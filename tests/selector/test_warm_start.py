"""The warm start (selector/warmup/triton_setup.py): Triton's set-up in a background thread as a compile
starts, then one warm-up per compile worker (selector/warmup/compile_workers.py); installed and removed
with the selector, never begun for a CPU compile, and every failure costs only the warm-up."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

pytest.importorskip("torch")

from kselect.selector.warmup.compile_workers import WorkerWarmup  # noqa: E402
from kselect.selector.warmup.triton_setup import WarmStart  # noqa: E402

from spawned_jobs import broken_warm_up, warm, warm_for  # noqa: E402


@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as p:
        p.submit(warm, 0.0).result()  # up, as Inductor's pool is once use_process_pool() says so
        yield p


def test_warm_up_waits_for_the_pool_then_submits_one_per_worker_once(pool):
    up = []
    warmup = WorkerWarmup(ready=lambda: (pool, 2, (0.2,)) if up else None, job=warm)
    assert warmup.start() is False and not warmup.started and warmup.summary() == {}
    up.append(True)
    assert warmup.start("a Dynamo callback's argument") is True and warmup.started
    assert warmup.start() is False  # once per selector: every later compile start does nothing
    deadline = time.monotonic() + 60
    while warmup.summary()["done"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = warmup.summary()
    assert (got["jobs"], got["done"], got["failed"]) == (2, 2, 0)
    assert got["workers"] in (1, 2) and got["median_ms"] >= 190 and got["last_done_ms"] >= got["median_ms"]


def test_a_failed_warm_up_is_counted_and_a_broken_pool_stops_it(pool):
    failing = WorkerWarmup(ready=lambda: (pool, 2, (0.0,)), job=broken_warm_up)
    assert failing.start() is True
    deadline = time.monotonic() + 60
    while failing.summary()["failed"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failing.summary()["failed"] == 2 and failing.summary()["done"] == 0

    def no_pool():
        raise RuntimeError("compile workers disabled")

    broken = WorkerWarmup(ready=no_pool)
    assert broken.start() is False and broken.summary() == {"error": "RuntimeError: compile workers disabled"}
    assert broken.start() is False  # not retried at every compile start


def _wait(cond, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_the_set_up_runs_in_the_background_then_warms_the_workers_once(pool):
    release = threading.Event()
    on_thread = []

    def prepare():
        on_thread.append(threading.current_thread().name)
        release.wait(30)  # a slow C build: start() must not wait for it
        return "sm-test"

    ws = WarmStart(gate=lambda: True, prepare=prepare, pool=lambda: (pool, 2), job=warm_for)
    assert ws.summary() == {} and not ws.started
    assert ws.start("a Dynamo callback's argument") is True and ws.started
    assert ws.summary()["prepare_ms"] is None and not ws.workers.started  # still preparing
    assert ws.start() is False  # once per selector
    release.set()
    ws.join(30)
    _wait(lambda: ws.workers.summary().get("done") == 2)
    got = ws.summary()
    assert on_thread == ["kselect-warm-start"] and got["target"] == "sm-test" and got["prepare_ms"] > 0
    assert "error" not in got and (got["workers"]["jobs"], got["workers"]["done"], got["workers"]["failed"]) == (
        2,
        2,
        0,
    )


def test_no_start_for_a_cpu_compile_and_the_next_chance_takes_it(pool):
    in_use = []
    ws = WarmStart(gate=lambda: bool(in_use), prepare=lambda: "sm-test", pool=lambda: (pool, 2), job=warm_for)
    assert ws.start() is False and not ws.started and ws.summary() == {}
    in_use.append(True)  # CUDA in use by the next compile (or by the first GEMM's decision)
    assert ws.start() is True
    ws.join(30)
    _wait(lambda: ws.workers.summary().get("done") == 2)
    assert ws.summary()["workers"]["done"] == 2


def test_a_pool_that_comes_up_late_is_warmed_at_a_later_start(pool):
    up = []
    ws = WarmStart(gate=lambda: True, prepare=lambda: "sm-test", pool=lambda: (pool, 2) if up else None, job=warm_for)
    assert ws.start() is True
    ws.join(30)
    assert ws.summary()["target"] == "sm-test" and not ws.workers.started  # no pool yet: nothing sent
    up.append(True)
    assert ws.start() is False  # already begun; it only retries the workers
    _wait(lambda: ws.workers.summary().get("done") == 2)
    assert ws.workers.summary()["done"] == 2


def test_failures_cost_only_the_warm_start(pool):
    def broken():
        raise OSError("cannot build Triton's CUDA utilities")

    ws = WarmStart(gate=lambda: True, prepare=broken, pool=lambda: (pool, 2), job=warm_for)
    assert ws.start() is True
    ws.join(30)
    got = ws.summary()
    assert got["error"].startswith("OSError: cannot build") and got["target"] is None and not ws.workers.started

    def gate():
        raise RuntimeError("no CUDA here")

    refused = WarmStart(gate=gate)
    assert refused.start() is False and refused.summary() == {"error": "RuntimeError: no CUDA here"}
    no_workers = WarmStart(gate=lambda: True, prepare=lambda: "sm-test", pool=lambda: (pool, 2), warm_workers=False)
    assert no_workers.start() is True
    no_workers.join(30)
    assert no_workers.summary()["workers"] is None and not no_workers.workers.started


def test_enable_installs_the_warm_start_at_each_compile_start_and_disable_removes_it():
    """enable() hooks the warm start into Dynamo's compile-start callbacks, in verify and predict;
    a CPU compile does not begin it (CUDA is not in use) and compiles as stock; disable() unhooks
    it; warm_start=False hooks nothing, unless verify's templates compile in workers."""
    import torch
    from torch._dynamo.callback import callback_handler

    from kselect.selector.inductor import lifecycle as ksi

    before = list(callback_handler.start_callbacks)
    try:
        sel = ksi.enable("verify")
        assert sel.warm_start is not None and sel.warm_start.start in callback_handler.start_callbacks
        torch._dynamo.reset()
        got = torch.compile(lambda x: (x * 2).sum())(torch.ones(8))
        assert got.item() == 16.0 and not sel.warm_start.started  # a CPU compile: nothing begun
    finally:
        ksi.disable()
    assert callback_handler.start_callbacks == before
    try:
        assert ksi.enable("predict").warm_start is not None
        assert ksi.enable("verify", warm_start=False).warm_start is None and callback_handler.start_callbacks == before
        assert ksi.enable("verify", warm_start=False, compile_in="workers").warm_start is not None
        assert ksi.enable("predict", warm_start=False, compile_in="workers").warm_start is None
    finally:
        ksi.disable()
    assert callback_handler.start_callbacks == before
