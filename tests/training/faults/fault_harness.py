"""Real `kselect collect` processes for the fault suite: start, find the worker, kill, inspect.

Everything here acts on real processes (`/proc`) and real dataset files; nothing is mocked.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

KEY = ["problem_key", "candidate_key"]


def write_shapes(
    path: Path, n: int, seed: int, extra: list[tuple[int, int, int]] = (), sizes: tuple[int, int] = (1, 64)
) -> list[str]:
    """A CSV of `n` distinct fp32 shapes with M, N, K in `sizes` (plus `extra`); returns their
    problem keys. Small sizes measure in milliseconds; (256, 320) takes about a second a shape."""
    from kselect.kernels import Problem

    rng = random.Random(seed)
    shapes = list(dict.fromkeys(extra))
    while len(shapes) < n + len(extra):
        shape = (rng.randint(*sizes), rng.randint(*sizes), rng.randint(*sizes))
        if shape not in shapes:
            shapes.append(shape)
    path.write_text("M,N,K,dtype\n" + "".join(f"{m},{n_},{k},fp32\n" for m, n_, k in shapes))
    return [Problem(m, n_, k, "fp32").key for m, n_, k in shapes]


def collect_cmd(shapes: Path, out: Path, target_ms: float = 0.02, shard: str = "0/1") -> list[str]:
    return [
        sys.executable,
        "-m",
        "kselect.training.cli.main",
        "collect",
        "--device",
        "cpu",
        "--backends",
        "aten",
        "--space",
        "default",
        "--shapes-file",
        str(shapes),
        "--out",
        str(out),
        "--target-ms",
        str(target_ms),
        "--shard",
        shard,
    ]


def start(cmd: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    """The collector in a process group of its own, via setsid() (so no signal reaches the test)."""
    fh = open(log, "ab")
    return subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=fh, stderr=fh, start_new_session=True)


def alive(pid: int) -> bool:
    """Running (a zombie has exited: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def worker_of(supervisor: int) -> int | None:
    """The pid of the supervisor's live collection worker, if it has one now."""
    for children in Path(f"/proc/{supervisor}/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        for pid in map(int, pids):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"kselect.training.measure.collect" in cmd and alive(pid):
                return pid
    return None


def wait_for(predicate, timeout: float, what: str, poll: float = 0.01):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def kill(pid: int, sig=signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


class PartRows:
    """Every row of every published part file (and the compact file), read once per file:
    published files never change, so the rows on disk at any moment are these."""

    def __init__(self, out: Path):
        self.out, self.seen = Path(out), {}

    def rows(self) -> pd.DataFrame:
        files = sorted((self.out / "parts").glob("*.parquet")) if (self.out / "parts").is_dir() else []
        for f in files:
            if f.name not in self.seen:
                self.seen[f.name] = pd.read_parquet(f, columns=[*KEY, "status", "error"])
        frames = [df for name, df in self.seen.items() if (self.out / "parts" / name).exists()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEY, "status", "error"])

    def ok_identities(self) -> set[tuple[str, str]]:
        df = self.rows()
        ok = df[df["status"] == "ok"]
        return set(zip(ok["problem_key"], ok["candidate_key"]))

    def count(self) -> int:
        return len(list((self.out / "parts").glob("*.parquet"))) if (self.out / "parts").is_dir() else 0


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, their children, ...)."""
    found, todo = [], [pid]
    while todo:
        for children in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                kids = [int(k) for k in children.read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def stop_tree(proc: subprocess.Popen) -> None:
    """A test's clean-up, whatever happened: SIGKILL the process and everything below it
    (only while it is unreaped, so its pid cannot belong to another process)."""
    if proc.poll() is None:
        for pid in [*descendants(proc.pid), proc.pid]:
            kill(pid)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def stop_worker(pid: int, out: Path) -> None:
    """SIGKILL `pid` if it still is a collection worker of dataset `out` (an orphan a failed
    test left), never a process that reused the pid."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"kselect.training.measure.collect" in cmd and str(out).encode() in cmd:
        kill(pid)
