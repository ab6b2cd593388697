"""Worker processes that never outlive their supervisor.

A measuring worker left running after its supervisor is gone would keep timing kernels while
a resumed collection starts a second worker on the same dataset (and, on a GPU, on the same
card). Three mechanisms rule that out:

- each worker runs in its own process group, so the supervisor can kill it together with any
  process it started (compile pools);
- the worker asks Linux to SIGKILL it when its parent dies (prctl PR_SET_PDEATHSIG), which
  also covers a supervisor killed with SIGKILL, and exits at once if the parent is already gone;
- the supervisor kills every live worker group when it exits, normally, by an exception, or
  on SIGTERM / SIGINT / SIGHUP.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading

SUPERVISOR_PID_ENV = "KSELECT_SUPERVISOR_PID"
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()  # a stop signal arrived: supervisor threads start no new worker


class WorkersStopped(SystemExit):
    """This process is stopping on a signal: no worker may be (re)started."""


def raise_if_stopping() -> None:
    """WorkersStopped once a stop signal arrived: a supervisor thread must neither restart its
    worker nor blame the work in flight for a death this process caused."""
    if _stopping.is_set():
        raise WorkersStopped(1)


def start_worker(cmd: list[str], env: dict) -> subprocess.Popen:
    """Start `cmd` in a new process group, registered for killing when this process stops."""
    raise_if_stopping()
    env = dict(env, **{SUPERVISOR_PID_ENV: str(os.getpid())})
    # a group of its own (Python < 3.11 has no process_group; setsid() also makes one)
    own_group = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
    proc = subprocess.Popen(cmd, env=env, **own_group)
    with _live_lock:
        _live.add(proc)
    return proc


def kill_worker(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group -- it, and whatever it started and left behind
    when it died (Linux keeps a group's id from reuse while any member lives) -- and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=30)
    forget_worker(proc)


def forget_worker(proc: subprocess.Popen) -> None:
    """The worker has exited; its group is no longer ours to kill."""
    with _live_lock:
        _live.discard(proc)


def kill_all_workers() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        kill_worker(proc)


atexit.register(kill_all_workers)


def _signal_all_workers() -> None:
    """SIGKILL every live worker group without waiting: a signal handler may have interrupted
    a `Popen.wait`, whose lock a second wait would spin on; the interrupted code reaps them."""
    for proc in list(_live):
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def _on_stop_signal(signum, frame):
    _stopping.set()
    _signal_all_workers()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def workers_die_with_this_process():
    """While inside: SIGTERM, SIGINT and SIGHUP (unless ignored) kill every live worker group, then stop this
    process (SystemExit 128+signal, KeyboardInterrupt for SIGINT). Signal handlers can only be
    installed from the main thread; elsewhere this only relies on the exit paths above."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # a signal this process ignores (nohup's SIGHUP, SIGINT of a background job) stays ignored
    previous = {s: signal.getsignal(s) for s in _STOP_SIGNALS}
    previous = {s: h for s, h in previous.items() if h is not signal.SIG_IGN}
    _stopping.clear()
    for s in previous:
        signal.signal(s, _on_stop_signal)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def die_with_supervisor() -> None:
    """Called first thing in a worker process: be SIGKILLed when the parent dies; if the
    supervisor that started us is already gone, exit now."""
    expected = os.environ.get(SUPERVISOR_PID_ENV)
    if not expected or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != int(expected):  # the parent died before the prctl took effect
        os._exit(137)
