"""verify's own measurement: the kept templates compile in the background (selector/verify/template_compiles.py
Compiles, in threads or in worker processes) while the caller makes operands and runs ATen; a failed
compile is reported, not raised."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("torch")

from kselect.selector.verify.template_compiles import Compiles  # noqa: E402

from spawned_jobs import burn, fail  # noqa: E402


class _Template:
    """A kept choice whose compile blocks until released."""

    def __init__(self, release: threading.Event, error: str | None = None):
        self.release, self.error = release, error
        self.started, self.compiled = threading.Event(), False

    def precompile(self):
        self.started.set()
        assert self.release.wait(10), "never released"
        if self.error:
            raise RuntimeError(self.error)
        self.compiled = True


def test_templates_compile_in_the_background_and_failures_are_reported():
    release = threading.Event()
    ok, bad = _Template(release), _Template(release, error="ptxas: out of registers")
    compiles = Compiles([ok, bad])
    assert compiles.where == "threads" and compiles.todo == [0, 1]
    # both compiles are under way while the caller goes on
    assert ok.started.wait(10) and bad.started.wait(10)
    assert not ok.compiled and not compiles.done()
    time.sleep(0.05)  # both wait, using no CPU
    release.set()
    failed = compiles.wait()
    assert ok.compiled and compiles.done()
    assert list(failed) == [1] and "RuntimeError: ptxas: out of registers" in failed[1]
    assert compiles.wait() == failed  # idempotent: measure() waits again on its way out
    # a failed compile is timed too; both waited for the release, which was not CPU work
    got = compiles.summary()
    assert sorted(got["per_choice"]) == [0, 1]
    for t in got["per_choice"].values():
        assert t["start_ms"] >= 0 and t["start_ms"] + t["wall_ms"] <= got["span_ms"] + 1e-3
        assert 0 <= t["cpu_ms"] < t["wall_ms"]
    assert got["children_cpu_ms"] >= 0


def test_compile_timings_tell_work_from_waiting():
    """One compile burns CPU in its thread, the other waits on a child process: the record
    shows the first's CPU time near its wall time, and the child's CPU time apart."""
    import subprocess
    import sys

    class _Busy:
        def precompile(self):
            end = time.thread_time() + 0.2
            while time.thread_time() < end:
                pass

    class _Child:
        def precompile(self):  # a CPU-bound child, as the assembler is
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass",
                ],
                check=True,
            )

    compiles = Compiles([_Busy(), _Child()])
    assert compiles.summary() == {}  # nothing to say before the wait
    assert compiles.wait() == {}
    got = compiles.summary()
    busy, child = got["per_choice"][0], got["per_choice"][1]
    assert busy["cpu_ms"] >= 190 and busy["wall_ms"] >= busy["cpu_ms"] - 1
    assert child["wall_ms"] >= 290 and child["cpu_ms"] < 0.5 * child["wall_ms"]
    assert got["children_cpu_ms"] >= 290
    assert got["span_ms"] >= max(t["start_ms"] + t["wall_ms"] for t in got["per_choice"].values()) - 1e-3


class _Loaded:
    """A kept template whose compile here is the load after its worker (quick), counted."""

    def __init__(self):
        self.loads = 0

    def precompile(self):
        self.loads += 1


def test_templates_compile_in_worker_processes_then_load_here():
    """compile_in="workers": each template goes to a worker process and is loaded here once the
    worker is done (a Triton cache hit on the GPU); the record says how long the worker took and
    that this thread did little. A template the workers refuse compiles in a thread; a worker
    that fails is retried here, so the error that counts is this process's own."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    a, b, refused, lost = _Loaded(), _Loaded(), _Loaded(), _Loaded()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(burn, 0.0).result()  # the workers are up, as bench e2e waits for Inductor's

        def submit(choice):
            if choice is refused:
                return None
            return pool.submit(fail) if choice is lost else pool.submit(burn, 0.3)

        compiles = Compiles([a, b, refused, lost], "workers", submit=submit)
        assert compiles.where == "mixed" and compiles.todo == [0, 1, 2, 3]
        assert compiles.wait() == {}
    assert (a.loads, b.loads, refused.loads, lost.loads) == (1, 1, 1, 1)
    got = compiles.summary()
    assert got["where"] == "mixed"
    timed = got["per_choice"]
    for i in (0, 1):  # a worker burnt 0.3 s of CPU for each; this thread only waited
        assert timed[i]["worker_ms"] >= 290 and timed[i]["wall_ms"] >= timed[i]["worker_ms"]
        assert timed[i]["cpu_ms"] < 0.5 * timed[i]["wall_ms"]
    assert "worker_ms" not in timed[2] and "worker_ms" in timed[3]


def test_compile_in_workers_without_a_pool_compiles_in_threads():
    """No compile-worker pool here (this CPU run has no Triton GPU templates for one): workers
    were asked for, threads did it, and the record says so; a bad place is refused."""
    compiles = Compiles([_Loaded(), _Loaded()], "workers", submit=lambda choice: None)
    assert compiles.where == "threads" and compiles.wait() == {}
    assert compiles.summary()["where"] == "threads"
    with pytest.raises(ValueError, match="compile_in must be one of"):
        Compiles([_Loaded()], "gpu")


def test_nothing_to_compile_starts_nothing():
    compiles = Compiles([object(), object()])  # no precompile: nothing to compile
    assert compiles.where == "none" and compiles.todo == [] and compiles.done() and compiles.wait() == {}
    assert compiles.summary() == {}


@pytest.mark.gpu
def test_release_gpu_memory_frees_the_workspace_a_new_stream_made():
    """cuBLAS on a stream of its own makes a workspace that torch keeps for the process's life
    (verify's measurement runs ATen on one): release_gpu_memory gives it back, with the
    allocator's unused blocks."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (the H200)")
    from kselect.selector.verify.timing import release_gpu_memory

    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    assert release_gpu_memory()
    base = torch.cuda.memory_allocated()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        b = a @ a
    torch.cuda.synchronize()
    del b
    held = torch.cuda.memory_allocated() - base
    assert held >= 1 << 20, f"no workspace held after a GEMM on a new stream ({held} bytes)"
    assert release_gpu_memory()
    assert torch.cuda.memory_allocated() <= base
    assert torch.cuda.memory_reserved() - torch.cuda.memory_allocated() < 2 << 20  # nothing idle kept
