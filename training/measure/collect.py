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

import json
import logging
import os
import re
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kselect.kernels.backend import CandidateError, get_backend, shared_knobs
from kselect.kernels.candidate import KNOBS, Candidate
from kselect.kernels.candidate_list import candidate_list, stable_hash
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import shared_memory_bytes
from kselect.selector.model.features import DEFAULT_SMEM_OPTIN
from kselect.training.data.dataset import KEY, DatasetDir
from kselect.training.data.dataset_lock import collector_lock
from kselect.training.measure.worker_process import (
    die_with_supervisor,
    kill_worker,
    raise_if_stopping,
    start_worker,
    workers_die_with_this_process,
)

log = logging.getLogger(__name__)
MAX_RESTARTS = 100  # worker deaths one supervisor handles (each unit is tried twice)
MAX_IDLE_CRASHES = 3  # deaths in a row that no unit of work can be charged with
SHAPE_FAILED = "shape failed before its first candidate: "
CANDIDATE_DIED = "worker died while running this candidate"
FLUSH_ROWS = 400
FLUSH_SECONDS = 30.0


class CollectError(ValueError):
    """Bad collection arguments (shard spec, space spec, ...)."""


def parse_shard(spec: str) -> tuple[int, int]:
    """'i/n' with 0 <= i < n."""
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise CollectError(f"--shard must look like i/n (e.g. 0/4), got {spec!r}") from None
    if n < 1 or not 0 <= i < n:
        raise CollectError(f"--shard {spec!r}: need 0 <= i < n and n >= 1")
    return i, n


def parse_space(spec: str) -> tuple[str, int]:
    """'exhaustive' | 'default' | 'sample:N' (DEFAULT space + seeded sample of EXHAUSTIVE)."""
    if spec in ("exhaustive", "default"):
        return spec, 0
    if spec.startswith("sample:"):
        try:
            n = int(spec.split(":", 1)[1])
        except ValueError:
            n = 0
        if n > 0:
            return "sample", n
    raise CollectError(f"--space must be exhaustive, default or sample:N (N > 0), got {spec!r}")


def shard_problems(problems: list[Problem], shard: tuple[int, int]) -> list[Problem]:
    """Deterministic split; hashed order so a time-limited run still spans every family."""
    ordered = sorted({p.key: p for p in problems}.values(), key=lambda p: stable_hash(p.key))
    return ordered[shard[0] :: shard[1]]


def row_for(problem: Problem, cand: Candidate, **measured) -> dict:
    row = {
        "problem_key": problem.key,
        "op": problem.op,
        "M": problem.M,
        "N": problem.N,
        "K": problem.K,
        "batch": problem.batch,
        "dtype": problem.dtype,
        "layout": problem.layout,
        "model": problem.model,
        # scaled_mm's fields; other problems (a grouped GEMM's own type too) leave them unset
        "out_dtype": getattr(problem, "out_dtype", ""),
        "scaling": getattr(problem, "scaling", ""),
        "fast_accum": bool(getattr(problem, "fast_accum", False)),
        "candidate_key": cand.key,
        "backend": cand.backend,
        "template": cand.template,
        "params": json.dumps(cand.kwargs, sort_keys=True),
    }
    knobs = shared_knobs(cand)  # e.g. FlyDSL's TILE_M as BLOCK_M, as the features read it
    row.update({k: int(knobs.get(k, 0) or 0) for k in KNOBS})
    row.update(
        {
            "status": "ok",
            "error": "",
            "time_ms": float("nan"),
            "time_min_ms": float("nan"),
            "time_max_ms": float("nan"),
            "spread": float("nan"),
            "noisy": False,
            "reps": 0,
            "method": "",
            "rel_error": float("nan"),
            "compile_s": 0.0,
            "oracle": False,
            "space": "",
            "fingerprint_id": "",
            "worker": "",
            "workload": "",
            "collected_at": time.time(),
        }
    )
    row.update(measured)
    return row


@dataclass
class CollectPlan:
    """What one worker measures; serialised to JSON for the worker process."""

    out: str
    problems: list[dict]
    workloads: dict = field(default_factory=dict)  # problem key -> workload tag
    backends: list[str] = field(default_factory=lambda: ["aten", "triton"])
    space: str = "sample"
    n_sample: int = 240
    deadline: float = 0.0  # unix time; 0 = none
    worker: str = "w0"
    fingerprint_id: str = ""
    target_ms: float = 0.25
    precompile_workers: int = 0
    device: str = "cuda"


# ---------------------------------------------------------------------------- worker
def inflight_path(plan) -> Path:
    """Where a crash-safe worker (any plan with `out` and `worker`) records the work in flight."""
    return Path(plan.out) / "inflight" / f"{plan.worker}.json"


def plan_path(plan) -> Path:
    """Where its supervisor writes the plan the worker process reads."""
    return Path(plan.out) / "inflight" / f"{plan.worker}.plan.json"


def write_inflight(path: Path, record: dict) -> None:
    """Replace the in-flight record atomically: a reader sees the old or the new one whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def read_inflight(path: Path) -> dict | None:
    """The in-flight record, or None when there is none or it cannot be read (a torn or
    foreign file is reported, never fatal: the unit it named is simply measured again)."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable in-flight record %s (%s)", path, exc)
        return None
    if not isinstance(record, dict):
        log.warning("ignoring in-flight record %s: not a JSON object", path)
        return None
    return record


def inflight_unit(record: dict | None) -> tuple[Problem, Candidate | None] | None:
    """(problem, candidate or None while the shape is being set up) of a collection's
    in-flight record; None when there is none or it does not name one."""
    if record is None:
        return None
    try:
        problem = Problem.from_dict(record["problem"])
        cand = Candidate.from_json(record["candidate"]) if record.get("candidate") else None
    except Exception as exc:  # noqa: BLE001 -- any malformed record is ignored alike
        log.warning("ignoring in-flight record that names no unit (%s: %s)", type(exc).__name__, exc)
        return None
    return problem, cand


def shape_failure_rows(problem: Problem, cands: list[Candidate], why: str, common: dict) -> list[dict]:
    """One failed row per candidate of a shape that could not be set up, so it is skipped."""
    error = (SHAPE_FAILED + why)[:500]
    return [row_for(problem, c, status="launch_error", error=error, **common) for c in cands]


def run_worker(plan: CollectPlan) -> int:
    """Measure the plan's problems on this process's GPU; returns 0 when done or timed out."""
    import torch

    from kselect.kernels.operands import reference, rotating_operands
    from kselect.kernels.timing import warm_gpu

    fault = FaultInjector.from_env()
    fault.point("start", plan.worker)
    ds = DatasetDir(Path(plan.out))
    done = ds.done_keys()
    inflight = inflight_path(plan)
    inflight.parent.mkdir(parents=True, exist_ok=True)
    on_gpu = plan.device != "cpu"
    if on_gpu:
        props = torch.cuda.get_device_properties(0)
        smem_limit = int(getattr(props, "shared_memory_per_block_optin", 0)) or DEFAULT_SMEM_OPTIN
        l2 = int(getattr(props, "L2_cache_size", 50 << 20))
    else:
        smem_limit, l2 = 1 << 40, 32 << 20
    problems = [Problem.from_dict(d) for d in plan.problems]
    work = []
    for p in problems:
        cands = [c for c in candidate_list(p, plan.backends, plan.space, plan.n_sample) if (p.key, c.key) not in done]
        if cands:
            work.append((p, cands))
    total = sum(len(c) for _, c in work)
    if not total:
        return 0
    try:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=f"collect {plan.worker}", unit="cand", mininterval=10, smoothing=0.05)
    except ImportError:  # pragma: no cover
        bar = None
    backends = {n: get_backend(n) for n in plan.backends}
    if "triton" in backends:
        # Compiles run in the background, shape by shape, while the GPU measures.
        items = [(c, p) for p, cs in work for c in cs if c.backend == "triton"]
        backends["triton"].precompile(items, workers=plan.precompile_workers, wait=False)
    if on_gpu:
        warm_gpu()
    rows: list[dict] = []
    last_flush = time.time()

    def save(batch: list[dict]) -> None:
        ds.append(batch, plan.worker, before_publish=lambda: fault.point("write", plan.worker))
        fault.point("written", plan.worker)
        inflight.unlink(missing_ok=True)  # the unit in flight has its row on disk now

    def flush(force=False):
        nonlocal rows, last_flush
        if rows and (force or len(rows) >= FLUSH_ROWS or time.time() - last_flush > FLUSH_SECONDS):
            save(rows)
            rows, last_flush = [], time.time()

    common = {
        "oracle": plan.space == "exhaustive",
        "space": plan.space,
        "fingerprint_id": plan.fingerprint_id,
        "worker": plan.worker,
    }
    for p, cands in work:
        if plan.deadline and time.time() > plan.deadline:
            log.warning("deadline reached; stopping before %s", p.key)
            break
        common_p = dict(common, workload=plan.workloads.get(p.key, ""))
        write_inflight(inflight, {"problem": p.to_dict(), "candidate": None})
        fault.point("setup", p.key)
        try:
            sets = rotating_operands(p, l2, plan.device)
            ref = reference(p, sets[0])
        except Exception as exc:  # noqa: BLE001 -- e.g. operands too large to allocate
            if not _device_usable(plan.device):
                raise  # a poisoned CUDA context: die, so a fresh worker retries this shape
            why = f"{type(exc).__name__}: {exc}"
            log.warning("%s: %s%s", p.key, SHAPE_FAILED, why)
            save(shape_failure_rows(p, cands, why, common_p))
            if bar is not None:
                bar.update(len(cands))
            continue
        aten_ms = None
        # ATen first: its time bounds how long a hopeless candidate may be timed.
        for cand in sorted(cands, key=lambda c: c.backend != "aten"):
            write_inflight(inflight, {"problem": p.to_dict(), "candidate": cand.to_json()})
            fault.tick(f"{p.key} {cand.key}")
            rows.append(
                _measure(
                    p,
                    cand,
                    backends[cand.backend],
                    sets,
                    ref,
                    smem_limit,
                    plan.target_ms,
                    aten_ms,
                    common_p,
                    plan.device,
                )
            )
            if cand.backend == "aten" and rows[-1]["status"] == "ok":
                aten_ms = rows[-1]["time_ms"]
            if bar is not None:
                bar.update(1)
            flush()
        del sets, ref
        flush(force=True)
        inflight.unlink(missing_ok=True)
        if on_gpu:
            torch.cuda.empty_cache()
    flush(force=True)
    inflight.unlink(missing_ok=True)
    if bar is not None:
        bar.close()
    return 0


def _device_usable(device: str) -> bool:
    """Whether the device still runs work after an error: a sticky CUDA error fails every later
    shape of this process, which must not be recorded as those shapes' fault."""
    import torch

    try:
        torch.ones(1, device=device).add_(1).item()
        return True
    except Exception:  # noqa: BLE001 -- any error here means the context is unusable
        return False


def _measure(p, cand, backend, sets, ref, smem_limit, target_ms, aten_ms, common, device) -> dict:
    """One candidate's row, its compile, check and timing in the problem's fp32 math (TF32 or
    IEEE for an fp32 GEMM; kernels/precision.py), as cuBLAS and Inductor read it."""
    from kselect.kernels.precision import fp32_math

    with fp32_math(p.dtype):
        return _measure_candidate(p, cand, backend, sets, ref, smem_limit, target_ms, aten_ms, common, device)


def _measure_candidate(p, cand, backend, sets, ref, smem_limit, target_ms, aten_ms, common, device) -> dict:
    import torch

    from kselect.kernels.operands import TOLERANCE, relative_error
    from kselect.kernels.timing import time_runners

    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    smem = shared_memory_bytes(cand, p.dtype_bytes)
    stages = cand.get("num_stages", 1) or 1
    # Lower bound: the pipeline buffers of one stage fewer than asked (Inductor's estimate
    # minus its 128-byte barrier allowance, per stage).
    smem_needed = (smem - 128) // stages * max(1, stages - 1) if smem else 0
    if smem_needed > smem_limit:
        return row_for(
            p,
            cand,
            status="pruned",
            error=f"needs >= {smem_needed} B shared memory, device has {smem_limit} B",
            **common,
        )
    t0 = time.time()
    try:
        compiled = backend.compile(cand, p)
    except CandidateError as exc:
        return row_for(p, cand, status="compile_error", error=exc.reason[:500], compile_s=time.time() - t0, **common)
    compile_s = time.time() - t0
    try:
        runners = [backend.runner(compiled, s) for s in sets]
        sets[0].out.fill_(float("nan"))
        runners[0]()
        sync()
    except Exception as exc:
        return row_for(
            p, cand, status="launch_error", error=f"{type(exc).__name__}: {exc}"[:500], compile_s=compile_s, **common
        )
    err = relative_error(sets[0].out, ref)
    if not err <= TOLERANCE[p.dtype]:
        against = " against ATen's output" if p.op == "scaled_mm" else ""  # operands.reference
        return row_for(
            p,
            cand,
            status="wrong_result",
            rel_error=err,
            error=f"relative error{against} {err:.3g} > {TOLERANCE[p.dtype]}",
            compile_s=compile_s,
            **common,
        )
    # A hopeless candidate gets 3 replays, not a full measurement: bound its GPU time.
    budget = None if aten_ms is None else 2.0 + 30 * aten_ms
    try:
        t = time_runners(runners, target_ms=target_ms, max_total_ms=budget, device=device)
    except Exception as exc:
        return row_for(
            p,
            cand,
            status="launch_error",
            error=f"timing: {type(exc).__name__}: {exc}"[:500],
            rel_error=err,
            compile_s=compile_s,
            **common,
        )
    return row_for(
        p,
        cand,
        time_ms=t.median_ms,
        time_min_ms=t.min_ms,
        time_max_ms=t.max_ms,
        spread=t.spread,
        noisy=t.noisy,
        reps=t.reps,
        method=t.method,
        rel_error=err,
        compile_s=compile_s,
        **common,
    )


FAULT_ENV = "KSELECT_COLLECT_FAULT"


class FaultInjector:
    """Test hook: KSELECT_COLLECT_FAULT kills the worker (exit 137, as SIGKILL would) at a
    chosen point of its work.

      "N:MARKER"        when its N-th unit of work (collection: candidate; re-timing: shape)
                        is in flight, once (MARKER, a file, records that it fired)
      "STAGE:N:MARKER"  the N-th time it reaches STAGE, once; collection's stages are
                        `start` (the worker, nothing in flight yet), `setup` (a shape's
                        operands), `unit` (a candidate), `write` (a part file written, not yet
                        renamed into place) and `written` (renamed)
      "at:REGEX"        every time it reaches a point whose "STAGE LABEL" matches REGEX
                        (labels: the problem key, or "problem_key candidate_key" for a unit):
                        units that always crash, as a faulting kernel does
    """

    def __init__(self, after: int = 0, marker: str = "", stage: str = "unit", at: str = ""):
        self.after, self.marker, self.stage, self.at = after, marker, stage, at
        self.count = 0

    @classmethod
    def from_env(cls) -> "FaultInjector":
        spec = os.environ.get(FAULT_ENV, "")
        if not spec:
            return cls()
        if spec.startswith("at:"):
            return cls(at=spec[3:])
        head, _, rest = spec.partition(":")
        if head.isdigit():
            return cls(int(head), rest)
        after, _, marker = rest.partition(":")
        return cls(int(after), marker, stage=head)

    def tick(self, label: str = "") -> None:
        """A unit of work is in flight."""
        self.point("unit", label)

    def point(self, stage: str, label: str = "") -> None:
        if self.at and re.search(self.at, f"{stage} {label}"):
            os._exit(137)
        if not self.after or stage != self.stage:
            return
        self.count += 1
        if self.count == self.after and not (self.marker and os.path.exists(self.marker)):
            if self.marker:
                Path(self.marker).write_text("fired")
            os._exit(137)


# ------------------------------------------------------------------------ supervisor
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

    return run_supervised("kselect.training.measure.collect", plan, gpu, os.environ, charge_inflight, max_restarts)


def supervise_all(plans: list, gpus: list, supervisor) -> list:
    """Run `supervisor(plan, gpu)` for each plan and its GPU at once (one worker per GPU);
    each one's result, in plan order."""
    if len(plans) == 1:
        return [supervisor(plans[0], gpus[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(plans)) as pool:
        return list(pool.map(lambda a: supervisor(*a), zip(plans, gpus)))


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


if __name__ == "__main__":  # worker entry point: python -m kselect.training.measure.collect PLAN.json
    die_with_supervisor()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run_worker(CollectPlan(**json.loads(Path(sys.argv[1]).read_text()))))
