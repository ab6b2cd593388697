"""Collection over a Ray cluster: one Ray task per shard, each the ordinary `--shard i/n`
collection (collect.py) on the GPU Ray gives it, then one compaction on the driver.

    kselect collect --ray [ADDRESS] --out /shared/ds ...

- **One task per GPU.** n shards (default: the cluster's GPUs; on `--device cpu` its CPUs), each
  a task asking for one GPU (one CPU), spread over the nodes. A task runs `collect(...,
  shard="i/n")`, so it writes the same atomic part files, under the same worker and lock names,
  as `kselect collect --shard i/n` run by Slurm or Kubernetes: either resumes the other.
- **A lost node.** Ray re-runs its task (`max_retries`) elsewhere. The re-run is a resumed
  collection: identities on disk are skipped, the dead worker's hidden temp files are removed
  and its unit in flight measured again. Rows the dead worker held in memory never reached disk
  and are measured again; no row on disk is measured twice. The re-run waits for the shard's
  lock (`LOCK_WAIT_S`) in case the attempt it replaces is still ending.
- **One compaction** on the driver once every task has ended (`compact=False` leaves it to
  the caller: `kselect retrain` has a stage for it).

`--out` must be one directory that the driver and every node see at the same path (a shared
file system); each task checks that it sees the driver's run before measuring. Ray is the
`ray` extra, imported only when a collection asks for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from kselect.kernels.backend import get_backend
from kselect.kernels.problem import Problem
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.dataset_lock import LOCK_DIR
from kselect.training.measure.collect import collect, outcome
from kselect.training.measure.collect_plan import CollectError, parse_shard, parse_space, shard_problems

RAY_INSTALL = "pip install 'kselect[ray]'"
RETRIES = 3  # Ray re-runs of a shard whose worker or node was lost
LOCK_WAIT_S = 120.0  # how long a re-run waits for the shard's lock


def require_ray():
    """The `ray` module, or a CollectError naming the extra that provides it."""
    try:
        import ray
    except ImportError:
        raise CollectError(f"--ray needs Ray, which the ray extra installs: {RAY_INSTALL}") from None
    return ray


@contextlib.contextmanager
def connected(ray, address: str):
    """Inside: connected to the Ray cluster at `address` ("auto": the one this machine belongs
    to; "local": a new one on this machine). A connection the caller already made is used as
    it is and left open; one made here is closed, and this process's SIGTERM handler restored."""
    if ray.is_initialized():
        yield
        return
    on_sigterm = signal.getsignal(signal.SIGTERM)  # ray.init replaces it for good
    try:
        ray.init(address=address, log_to_driver=True)
    except ConnectionError as exc:
        raise CollectError(
            f"no Ray cluster at --ray {address!r} ({exc}); start one (`ray start --head`) or "
            "pass --ray local for a cluster of this machine alone"
        ) from None
    try:
        yield
    finally:
        ray.shutdown()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)


def shard_count(ray, device: str, shards: int) -> int:
    """`shards` if given, else one per GPU of the cluster (per CPU on `device="cpu"`)."""
    if shards:
        if shards < 1:
            raise CollectError(f"--ray-shards must be >= 1, got {shards}")
        return shards
    unit = "GPU" if device == "cuda" else "CPU"
    n = int(ray.cluster_resources().get(unit, 0))
    if n < 1:
        raise CollectError(f"the Ray cluster has no {unit} now: pass --ray-shards N to queue N shards for it")
    return n


def _run_marker(out: Path, token: str) -> Path:
    """A file the driver writes into `out`: a task that cannot see it is looking at another directory."""
    return out / LOCK_DIR / f"fleet-{token}.json"


def _precompile_workers(ray) -> int:
    """Compile processes per GPU task: this node's CPUs shared by its GPUs (0 off a GPU)."""
    node_id = ray.get_runtime_context().get_node_id()
    node = next((n for n in ray.nodes() if n.get("NodeID") == node_id), {})
    gpus = int(node.get("Resources", {}).get("GPU", 0))
    return max(1, (os.cpu_count() or 2) // gpus - 1) if gpus else 0


def collect_shard(problems: list[dict], out: str, shard: str, token: str, options: dict) -> dict:
    """One Ray task: shard `shard` of `problems`, the ordinary collection into `out`."""
    if not _run_marker(Path(out), token).exists():
        raise CollectError(
            f"node {platform.node()} does not see the driver's run in {out}: --out must be a shared "
            "directory at the same path on every node"
        )
    precompile = _precompile_workers(require_ray()) if options["device"] == "cuda" else 0
    result = collect(
        [Problem.from_dict(d) for d in problems],
        out,
        shard=shard,
        precompile_workers=precompile,
        lock_wait_s=LOCK_WAIT_S,
        **options,
    )
    return {**result, "shard": shard, "node": platform.node()}


SUMMED = ("problems", "workers", "crashes", "shapes_complete", "shapes_unfinished_time_limit")


def merge(results: list[dict]) -> dict:
    """One collection's result out of its shards' (collect()'s keys; lists joined, counts summed)."""
    merged = {k: sum(r[k] for r in results) for k in SUMMED}
    merged["candidates_failed_by_crash"] = sum(r["candidates_failed_by_crash"] for r in results)
    merged["shapes_failed"] = sorted(k for r in results for k in r["shapes_failed"])
    merged["shapes_lost"] = sorted(k for r in results for k in r["shapes_lost"])
    merged["ok"] = all(r["ok"] for r in results)
    return merged


def run_tasks(ray, problems: list[Problem], out: Path, n: int, token: str, options: dict, retries: int, log):
    """Launch the n shard tasks and wait for all: (results of those that ended, {shard: why
    Ray gave it up} for the others)."""
    device = options["device"]
    resources = {"num_gpus": 1, "num_cpus": 1} if device == "cuda" else {"num_cpus": 1}
    task = ray.remote(collect_shard).options(max_retries=retries, scheduling_strategy="SPREAD", **resources)
    shared = ray.put([p.to_dict() for p in problems])
    pending = {task.remote(shared, str(out), f"{i}/{n}", token, options): f"{i}/{n}" for i in range(n)}
    log(f"collecting {len(problems)} shapes as {n} Ray tasks, one {'GPU' if device == 'cuda' else 'CPU'} each")
    results, failed = [], {}
    while pending:
        [ref], _ = ray.wait(list(pending), num_returns=1)
        shard = pending.pop(ref)
        try:
            result = ray.get(ref)
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) or exc  # a task's own exception, else Ray's
            failed[shard] = f"{type(cause).__name__}: {cause}"[:500]
            log(f"shard {shard} given up: {failed[shard]}")
            continue
        results.append(result)
        log(
            f"shard {shard} ended on {result['node']}: {result['shapes_complete']} of "
            f"{result['problems']} shapes complete ({len(results) + len(failed)} of {n} shards)"
        )
    return results, failed


def collect_on_ray(
    problems: list[Problem],
    out: str | Path,
    *,
    address: str = "auto",
    shards: int = 0,
    retries: int = RETRIES,
    compact: bool = True,
    backends=("aten", "triton"),
    space: str = "sample:240",
    max_minutes: float = 0.0,
    workloads: dict | None = None,
    target_ms: float = 0.25,
    device: str = "cuda",
    log: Callable[[str], None] = lambda message: None,
    before_compact: Callable[[], None] | None = None,
) -> dict:
    """Measure `problems` into the shared dataset directory `out` with one Ray task per shard
    (module docstring); returns collect()'s result over all shards, plus `shards`,
    `shards_failed` (shard -> why Ray gave it up) and `compacted_rows`. `before_compact()`
    runs once every task has ended (a test hook, as DatasetDir.append's `before_publish`)."""
    if device not in ("cuda", "cpu"):
        raise CollectError(f"--device must be cuda or cpu, got {device!r}")
    backend_names = [get_backend(n).name for n in backends]
    space_name, n_sample = parse_space(space)
    ray = require_ray()
    out, t0 = Path(out), time.time()
    deadline = t0 + 60 * max_minutes if max_minutes else 0.0
    options = dict(
        backends=backend_names,
        space=space,
        workloads=dict(workloads or {}),
        target_ms=target_ms,
        device=device,
        deadline=deadline,
    )
    token = uuid.uuid4().hex
    marker = _run_marker(out, token)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"driver": platform.node(), "started": t0}))
    try:
        with connected(ray, address):
            n = shard_count(ray, device, shards)
            results, failed = run_tasks(ray, problems, out, n, token, options, retries, log)
    finally:
        marker.unlink(missing_ok=True)
    ds = DatasetDir(out)
    timed_out = bool(deadline) and time.time() > deadline
    for shard in failed:  # what a given-up shard left, read from disk
        mine = shard_problems(problems, parse_shard(shard))
        left = outcome(ds, mine, mine, backend_names, space_name, n_sample, timed_out)
        results.append({"problems": len(mine), "workers": 0, "crashes": 0, **left})
    merged = merge(results)
    merged.update(shards=n, shards_failed=failed, seconds=time.time() - t0, compacted_rows=None)
    merged["ok"] = merged["ok"] and not failed
    if before_compact is not None:
        before_compact()
    if compact and ds.exists():
        from kselect.training.data.oracle import mark_oracle

        merged["compacted_rows"] = ds.compact(transform=mark_oracle)
        log(f"compacted {merged['compacted_rows']} rows into {ds.compact_path}")
    return merged
