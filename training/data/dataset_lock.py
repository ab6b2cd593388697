"""One collector at a time per dataset directory and shard.

Two collectors measuring the same shapes into one directory would time them twice (and, on a
GPU, time kernels on one card at once). A collector holds an exclusive `flock` on
`<dataset>/locks/collect-<i>of<n>.lock` for as long as it runs; the kernel releases it when the
process ends, however it ends, so there is never a stale lock to clean up. Shards of one split
(same n, different i) measure disjoint shapes and may share a directory; a collector whose split
overlaps a running one (same shard, or another n) is refused with the holder's pid. A fleet run's
re-run of a shard may wait a while for the shard's own lock (`wait_s`): the attempt it replaces
can still be ending where the scheduler gave up on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from pathlib import Path

from kselect.training.data.dataset import DatasetError

LOCK_DIR = "locks"
_NAME = re.compile(r"collect-(\d+)of(\d+)\.lock$")


class DatasetLockedError(DatasetError):
    """Another live collector holds the dataset directory (or an overlapping shard of it)."""


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError):
        pid = path.read_text().strip()
        if pid.isdigit():
            return f"process {pid}"
    return "another process"


def _refuse(root: Path, path: Path, shard: str) -> DatasetLockedError:
    return DatasetLockedError(
        f"{root} is being collected by {_holder(path)} (shard {shard}, lock {path}): "
        "wait for it to finish or stop it, or collect into another --out directory"
    )


def _is_held(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock, if it got one


def _take(fd: int, wait_s: float) -> bool:
    """Take the exclusive lock on `fd`, polling for up to `wait_s` seconds; whether it was taken."""
    give_up = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= give_up:
                return False
            time.sleep(min(1.0, max(0.0, give_up - time.monotonic())))


@contextlib.contextmanager
def collector_lock(root: str | Path, shard: tuple[int, int], wait_s: float = 0.0):
    """Hold `root`'s lock for shard (i, n) while inside; DatasetLockedError if a live
    collector holds it (still after `wait_s` seconds) or an overlapping shard."""
    root = Path(root)
    locks = root / LOCK_DIR
    locks.mkdir(parents=True, exist_ok=True)
    i, n = shard
    path = locks / f"collect-{i}of{n}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _take(fd, wait_s):
            raise _refuse(root, path, f"{i}/{n}")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        for other in sorted(locks.glob("collect-*.lock")):
            m = _NAME.search(other.name)
            if other != path and m and int(m.group(2)) != n and _is_held(other):
                raise _refuse(root, other, f"{m.group(1)}/{m.group(2)}")
        yield path
    finally:
        os.close(fd)  # releases the lock
