"""Measure every candidate of every shape on the GPUs of this machine, crash-safe.

Work split: the problem list is sorted by key; `--shard i/n` keeps problems[i::n] (any
scheduler can run the n shards: Slurm arrays, Ray, Kubernetes jobs); within a shard one
worker process per visible GPU takes every g-th problem.

Crash safety (docs/measurement.md, "Crash safety"): a worker writes its rows to new atomic
part files and keeps an "in flight" record of the shape it is setting up or the candidate it
is running, cleared once that candidate's row is on disk. If the worker dies, the supervisor
retries that unit once in a fresh worker (the death may have come from outside) and records
it as failed, with both exit reasons, only if it dies again; a shape that dies before its
first candidate is recorded as a shape-level failure and skipped. The worker dies with its
supervisor, and one collector at a time holds a dataset directory (training/data/dataset_lock.py).
Rerunning the same command after a kill resumes: every run skips identities already on disk.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from kselect.kernels.backend import get_backend
from kselect.kernels.candidate_list import candidate_list
from kselect.kernels.problem import Problem
from kselect.training.data.dataset import KEY, DatasetDir
from kselect.training.data.dataset_lock import collector_lock
from kselect.training.data.rows import CANDIDATE_DIED, SHAPE_FAILED, row_for, shape_failure_rows
from kselect.training.measure.collect_plan import CollectError, CollectPlan, parse_shard, parse_space, shard_problems
from kselect.training.measure.journal import inflight_path, inflight_unit, read_inflight
from kselect.training.measure.supervisor import MAX_RESTARTS, SupervisedRun, exit_reason, run_supervised, supervise_all
from kselect.training.measure.worker_process import (
    workers_die_with_this_process,
)

log = logging.getLogger(__name__)


def _identities(ds: DatasetDir, problem_key: str) -> set[str]:
    """Candidate keys of `problem_key` on disk (compact file and every part)."""
    if not ds.exists():
        return set()
    df = ds.load(on_corrupt="skip", columns=KEY)
    return set(df.loc[df["problem_key"] == problem_key, "candidate_key"])


def supervise(plan: CollectPlan, gpu: int | None, max_restarts: int = MAX_RESTARTS) -> SupervisedRun:
    """Run one worker in a child process on `gpu`; when it dies, retry the unit in flight once
    in a fresh worker, and record it as failed (both exit reasons) if it dies again."""
    inflight = inflight_path(plan)
    if (stale := inflight_unit(read_inflight(inflight))) is not None:
        log.warning(
            "%s: a previous collector stopped while %s was in flight; measuring it again",
            plan.worker,
            f"{stale[0].key} {stale[1].key}" if stale[1] else stale[0].key,
        )
    inflight.unlink(missing_ok=True)
    DatasetDir(Path(plan.out)).remove_temp_files(plan.worker)
    deaths: dict[tuple[str, str], list[str]] = {}

    def charge_inflight(code: int) -> bool:
        # the worker's group is dead: no process writes as this worker any more
        DatasetDir(Path(plan.out)).remove_temp_files(plan.worker)
        unit = inflight_unit(read_inflight(inflight))
        inflight.unlink(missing_ok=True)
        if unit is None:
            log.warning("%s: worker died (%s) with no unit in flight; restarting it", plan.worker, exit_reason(code))
            return False
        p, cand = unit
        ds = DatasetDir(Path(plan.out))
        on_disk = _identities(ds, p.key)
        if cand is not None and cand.key in on_disk:
            log.warning(
                "%s: worker died (%s) after %s was saved; restarting it", plan.worker, exit_reason(code), cand.key
            )
            return True
        died = CANDIDATE_DIED if cand is not None else "worker died while setting up this shape"
        tries = deaths.setdefault((p.key, cand.key if cand else ""), [])
        tries.append(exit_reason(code))
        if len(tries) < 2:
            log.warning(
                "%s: %s (%s): %s; retrying it once in a fresh worker",
                plan.worker,
                died,
                f"{p.key} {cand.key}" if cand else p.key,
                tries[0],
            )
            return True
        why = f"{died} ({tries[0]}), and again in a fresh worker ({tries[1]})"
        common = dict(
            oracle=plan.space == "exhaustive",
            space=plan.space,
            fingerprint_id=plan.fingerprint_id,
            worker=plan.worker,
            workload=plan.workloads.get(p.key, ""),
        )
        if cand is not None:
            rows = [row_for(p, cand, status="launch_error", error=why, **common)]
        else:
            todo = [c for c in candidate_list(p, plan.backends, plan.space, plan.n_sample) if c.key not in on_disk]
            rows = shape_failure_rows(p, todo, why, common)
        ds.append(rows, plan.worker)
        log.warning("%s: %s (%s): recorded as failed", plan.worker, why, f"{p.key} {cand.key}" if cand else p.key)
        return True

    return run_supervised(
        "kselect.training.measure.collect_worker", plan, gpu, os.environ, charge_inflight, max_restarts
    )


def collect(
    problems: list[Problem],
    out: str | Path,
    *,
    backends=("aten", "triton"),
    space: str = "sample:240",
    shard: str = "0/1",
    max_minutes: float = 0.0,
    gpus: list[int] | None = None,
    workloads: dict | None = None,
    target_ms: float = 0.25,
    device: str = "cuda",
    deadline: float = 0.0,
    precompile_workers: int = 0,
    lock_wait_s: float = 0.0,
) -> dict:
    """Measure `problems` (this shard of them) into dataset directory `out`.

    device="cpu" measures CPU backends (ATen/MKL) with host timing in one worker: for
    tests and for debugging the pipeline on a machine without a GPU.
    Fleet runs (training/measure/ray_fanout.py) run one collection per shard and pass what they
    share: `deadline` (unix time; wins over `max_minutes`), `precompile_workers` per GPU (0:
    this machine's CPUs over the GPUs this collection uses) and `lock_wait_s`, how long to wait
    for the shard's lock held by a collection of the same shard that is still ending.
    """
    import torch

    from kselect.training.measure.hardware_record import collect_fingerprint

    backend_names = [b.name for b in (get_backend(n) for n in backends)]
    space_name, n_sample = parse_space(space)
    mine = shard_problems(problems, parse_shard(shard))
    if device == "cpu":
        gpus = [None]
    elif device != "cuda":
        raise CollectError(f"--device must be cuda or cpu, got {device!r}")
    else:
        if gpus is None:
            gpus = list(range(torch.cuda.device_count()))
        if not gpus:
            raise CollectError(
                "no GPU visible: collection measures real kernels and needs CUDA (use --device cpu for CPU backends)"
            )
        for name in backend_names:
            avail = get_backend(name).availability("cuda")
            if not avail:
                raise CollectError(f"backend {name!r} cannot run here: {avail.reason}")
    fp = collect_fingerprint(gpus[0] or 0)
    ds = DatasetDir(Path(out))
    ds.write_fingerprint(fp)
    if not deadline and max_minutes:
        deadline = time.time() + 60 * max_minutes
    plans = [
        CollectPlan(
            out=str(out),
            problems=[p.to_dict() for p in mine[w :: len(gpus)]],
            workloads=dict(workloads or {}),
            backends=backend_names,
            space=space_name,
            n_sample=n_sample,
            deadline=deadline,
            worker=f"s{shard.replace('/', 'of')}g{g if g is not None else 'cpu'}",
            fingerprint_id=fp["fingerprint_id"],
            target_ms=target_ms,
            device=device,
            precompile_workers=precompile_workers or max(1, (os.cpu_count() or 2) // len(gpus) - 1),
        )
        for w, g in enumerate(gpus)
    ]
    t0 = time.time()
    with collector_lock(out, parse_shard(shard), wait_s=lock_wait_s), workers_die_with_this_process():
        runs = supervise_all(plans, gpus, supervise)
    timed_out = bool(deadline) and time.time() > deadline
    # A worker that ran to its end measured every shape of its plan, unless the deadline stopped it.
    unsure = [
        Problem.from_dict(d) for plan, run in zip(plans, runs) if timed_out or not run.finished for d in plan.problems
    ]
    result = {
        "problems": len(mine),
        "workers": len(plans),
        "crashes": sum(r.crashes for r in runs),
        "seconds": time.time() - t0,
    }
    result.update(outcome(ds, mine, unsure, backend_names, space_name, n_sample, timed_out))
    return result


def outcome(
    ds: DatasetDir,
    problems: list[Problem],
    unsure: list[Problem],
    backend_names: list[str],
    space: str,
    n_sample: int,
    timed_out: bool,
) -> dict:
    """Per-shape result of a collection: complete (a row for every candidate, measured or
    failed), failed before its first candidate (SHAPE_FAILED rows), or unfinished -- left by the
    time limit, else lost (the worker gave up); only the `unsure` shapes (those of a worker that
    did not run to its end) can be unfinished. `ok` is False when shapes were lost or failed."""
    df = ds.load(on_corrupt="skip", columns=["error"]) if ds.exists() else None
    have: dict[str, set[str]] = {}
    failed: set[str] = set()
    if df is not None and len(df):
        keys = {p.key for p in problems}
        df = df[df["problem_key"].isin(keys)]
        for key, group in df.groupby("problem_key"):
            have[str(key)] = set(group["candidate_key"])
        failed = set(df.loc[df["error"].str.startswith(SHAPE_FAILED), "problem_key"])
        crashed_candidates = int(df["error"].str.startswith(CANDIDATE_DIED).sum())
    else:
        crashed_candidates = 0
    unfinished = [
        p.key
        for p in unsure
        if not {c.key for c in candidate_list(p, backend_names, space, n_sample)} <= have.get(p.key, set())
    ]
    lost = [] if timed_out else sorted(unfinished)
    return {
        "shapes_complete": len(problems) - len(unfinished) - len(failed),
        "shapes_failed": sorted(failed),
        "shapes_unfinished_time_limit": len(unfinished) if timed_out else 0,
        "shapes_lost": lost,
        "candidates_failed_by_crash": crashed_candidates,
        "ok": not (failed or lost),
    }
