"""The supervisor loop of every crash-safe worker (collection and re-timing): run the worker in a
child process until it exits 0, charging each crash to the work in flight and restarting it;
and several such supervisors at once, one per GPU."""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from dataclasses import asdict, dataclass

from kselect.training.measure.collect_plan import CollectError
from kselect.training.measure.journal import plan_path
from kselect.training.measure.worker_process import (
    kill_worker,
    raise_if_stopping,
    start_worker,
    workers_die_with_this_process,
)

log = logging.getLogger(__name__)
MAX_RESTARTS = 100  # worker deaths one supervisor handles (each unit is tried twice)
MAX_IDLE_CRASHES = 3  # deaths in a row that no unit of work can be charged with


def exit_reason(code: int) -> str:
    """A worker's exit status in words: 'killed by SIGKILL' or 'exit code 1'."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def child_visible_device(gpu: int, visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for a worker on this process's GPU `gpu`. GPU indices count the
    devices this process sees, so where the scheduler has already narrowed them (Slurm, Ray and
    Kubernetes set CUDA_VISIBLE_DEVICES) index `gpu` names the entry of that list, not the card
    with that number."""
    if visible is None:
        return str(gpu)
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    if not 0 <= gpu < len(ids):
        raise CollectError(f"GPU {gpu} is not visible to this process (CUDA_VISIBLE_DEVICES={visible!r})")
    return ids[gpu]


@dataclass
class SupervisedRun:
    """How one supervised worker ended: its crash count, and whether it ran to its end
    (exit 0; a worker also exits 0 when it stops at the plan's deadline)."""

    crashes: int
    finished: bool


def run_supervised(
    module: str,
    plan,
    gpu: int | None,
    env: dict,
    on_crash,
    max_restarts: int = MAX_RESTARTS,
    max_idle_crashes: int = MAX_IDLE_CRASHES,
) -> SupervisedRun:
    """Write `plan` (a dataclass with `out`, `worker`, `deadline`) to `plan_path(plan)` and run
    `python -m module <that file>` in a child process on `gpu` until it exits 0; after each
    crash call `on_crash(exit code)` and restart. `on_crash` charges the crash to the work in
    flight (so the restarted worker retries or skips it) and returns False when there was
    none to charge; the loop gives up after `max_restarts` crashes, `max_idle_crashes` such
    uncharged crashes in a row, or past the plan's deadline. The worker runs in its own
    process group and dies with this process (training/measure/worker_process.py). One loop for every
    crash-safe worker: collection and re-timing."""
    env = dict(env)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = child_visible_device(gpu, env.get("CUDA_VISIBLE_DEVICES"))
    path = plan_path(plan)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(plan)))
    crashes = idle = 0
    with workers_die_with_this_process():
        while True:
            proc = start_worker([sys.executable, "-m", module, str(path)], env)
            try:
                code = proc.wait()
            finally:
                kill_worker(proc)
            raise_if_stopping()
            if code == 0:
                return SupervisedRun(crashes, finished=True)
            crashes += 1
            idle = idle + 1 if on_crash(code) is False else 0
            if crashes > max_restarts or idle >= max_idle_crashes or (plan.deadline and time.time() > plan.deadline):
                log.error(
                    "%s: giving up after %d crashes (%d in a row with no work in flight)", plan.worker, crashes, idle
                )
                return SupervisedRun(crashes, finished=False)


def supervise_all(plans: list, gpus: list, supervisor) -> list:
    """Run `supervisor(plan, gpu)` for each plan and its GPU at once (one worker per GPU);
    each one's result, in plan order."""
    if len(plans) == 1:
        return [supervisor(plans[0], gpus[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(plans)) as pool:
        return list(pool.map(lambda a: supervisor(*a), zip(plans, gpus)))
