"""Compile children: one subprocess per worker, one request at a time, answered over a pipe.

Compilers can abort (LLVM's SIGABRT on a bad config) or hang; in a child, either costs only
the request in flight. The parent writes one JSON request per line to the child's stdin; the
child handles it, writes its answer to the request's `result` file and says "done" on its own
protocol channel (a duplicate of stdout made before anything else prints, so a compiler's
prints can never corrupt the protocol). FlyDSL's compiles (kernels/flydsl/compile.py) and the
Triton compile-cost collector (kernels/triton/cross_compile.py) both use it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class ChildOutcome:
    """How one request to a compile worker ended."""

    returncode: int  # 0: answered; < 0: the worker died by that signal
    timed_out: bool
    wall_s: float
    stderr_tail: str

    @property
    def signal_name(self) -> str:
        if self.returncode >= 0:
            return ""
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def failure(self) -> tuple[str, str] | None:
        """("timeout" | "crashed", reason) when the child never answered; None when it did."""
        if self.timed_out:
            return "timeout", f"compile exceeded {self.wall_s:.0f} s and was killed"
        if self.returncode < 0:
            return "crashed", f"compiler process killed by {self.signal_name}"
        return None

    def missing_result(self) -> str:
        """The reason for a child that answered but left no readable result (it broke itself,
        e.g. on an import): the last line it printed."""
        last = self.stderr_tail.strip().splitlines()[-1:] or [""]
        return f"compile worker exited {self.returncode} without a result: {last[0][:300]}"


class Worker:
    """One compile child running `python -m <module>` (own OS process session, so a timeout kills exactly
    it and its children). The caller starts a new Worker after a crash or timeout."""

    def __init__(self, module: str, env: dict, log_dir: Path):
        self.log = tempfile.NamedTemporaryFile(prefix="worker.", suffix=".log", dir=log_dir, delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, req: dict, timeout: float) -> ChildOutcome:
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # already dead: reported below
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            return ChildOutcome(self.proc.wait(), True, time.perf_counter() - t0, self._tail())
        if self.proc.stdout.readline():
            return ChildOutcome(0, False, time.perf_counter() - t0, "")
        return ChildOutcome(self.proc.wait(), False, time.perf_counter() - t0, self._tail())

    def _tail(self) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def kill(self) -> None:
        if self.alive:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker's own OS process session: only what we started

    def close(self) -> None:
        if self.alive:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


def drain_with_workers(
    take: Callable[[], T | None], handle: Callable[[Worker, T], None], module: str, env: dict, log_dir: Path, n: int
) -> None:
    """The parent's side: `n` threads, each with its own child, call `handle(worker, item)` for
    every item `take()` gives until it gives None; a child that died is replaced before the
    next item."""

    def drain() -> None:
        worker = None
        try:
            while (item := take()) is not None:
                if worker is None or not worker.alive:
                    if worker is not None:
                        worker.close()
                    worker = Worker(module, env, log_dir)
                handle(worker, item)
        finally:
            if worker is not None:
                worker.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        for f in [pool.submit(drain) for _ in range(n)]:
            f.result()


def serve(handle: Callable[[dict], dict], before_each: Callable[[], None] = lambda: None) -> int:
    """The child's side: answer each stdin request with `handle(req)` written to req["result"].
    `before_each` runs first for every request (a testing hook that crashes or hangs)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    for line in sys.stdin:
        req = json.loads(line)
        before_each()
        with open(req["result"], "w") as f:
            json.dump(handle(req), f)
        proto.write("done\n")
    return 0
