"""Collect how long each Triton candidate takes to compile, on this machine's CPUs, for a GPU
target it need not have (kernels/triton/cross_compile.py).

Why: verify compiles the templates it keeps in parallel, so a GEMM's measurement waits for the
slowest compile among them (~1 s for lm_head's BK256 two-warp tile on the H200, against
0.4-0.7 s for the others: reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3). Pricing a candidate's compile needs its
cost before it is compiled, hence a table measured once per Triton version and target.

The plan list: every distinct compile of the EXHAUSTIVE space of a bf16 nt GEMM at each row
class (M = 16, 32, 64, 128 and 4096; K a multiple of every BLOCK_K), plus seeded samples of
the nn layout (contiguity hints on) and of a K that leaves a remainder (EVEN_K off). Plans are
sorted by id and `--shard i/n` keeps every n-th; each shard appends to its own CSV row by row,
so a stopped run loses nothing and resumes where it stopped. `--workers` compile children run
at once (default: one per CPU core); the cost recorded is CPU time, thread plus ptxas, which
parallel workers disturb far less than wall time.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import platform
import random
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kselect.kernels.candidate import TILE_KNOBS, Candidate
from kselect.kernels.compile_worker import Worker, drain_with_workers
from kselect.kernels.problem import Problem
from kselect.kernels.triton.backend import launch_plan
from kselect.kernels.triton.cross_compile import check_arch, plan_to_dict
from kselect.kernels.triton.launch_plan import LaunchPlan
from kselect.kernels.triton.space import triton_space
from kselect.training.measure.collect_plan import parse_shard

ROW_CLASSES = (16, 32, 64, 128, 4096)
LAYOUT_SAMPLE = 400  # nn plans (HINT_N on)
UNEVEN_K_SAMPLE = 300  # K = 4080: EVEN_K off for BLOCK_K >= 32
H200_SMS = 132  # NUM_SMS of the persistent template: a constant of the kernel, not a size
WORKER_MODULE = "kselect.kernels.triton.cross_compile"
FIELDS = (
    "plan_id",
    "candidate",
    "problem",
    "template",
    *TILE_KNOBS,
    "dtype",
    "layout",
    "EVEN_K",
    "HINT_M",
    "HINT_N",
    "arch",
    "repeat",
    "status",
    "reason",
    "wall_ms",
    "thread_cpu_ms",
    "ptxas_cpu_ms",
    "cpu_ms",
    "shared_bytes",
    "ptx_lines",
    "cubin_bytes",
    "triton",
    "host",
)
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class PlannedCompile:
    candidate: Candidate
    problem: Problem
    plan: LaunchPlan

    @property
    def plan_id(self) -> str:
        return hashlib.sha256(json.dumps(plan_to_dict(self.plan), sort_keys=True).encode()).hexdigest()[:16]


def _distinct(problem: Problem) -> dict[tuple, PlannedCompile]:
    out = {}
    for c in triton_space(problem, "exhaustive"):
        if c.template == "decompose_k":
            continue  # split-K runs ATen-style pieces here: no Triton compile of ours
        plan = launch_plan(c, problem, H200_SMS)
        out.setdefault(plan.compile_key, PlannedCompile(c, problem, plan))
    return out


def collection_plans(seed: int = 0) -> list[PlannedCompile]:
    """Every plan this collector compiles, sorted by plan id (see the module docstring)."""
    plans: dict[tuple, PlannedCompile] = {}
    for m in ROW_CLASSES:
        for key, pc in _distinct(Problem(m, 4096, 4096, "bf16", "nt")).items():
            plans.setdefault(key, pc)
    rng = random.Random(seed)
    for problem, n in (
        (Problem(4096, 4096, 4096, "bf16", "nn"), LAYOUT_SAMPLE),
        (Problem(4096, 4096, 4080, "bf16", "nt"), UNEVEN_K_SAMPLE),
    ):
        extra = [pc for key, pc in sorted(_distinct(problem).items(), key=lambda kv: kv[1].plan_id) if key not in plans]
        for pc in rng.sample(extra, min(n, len(extra))):
            plans[pc.plan.compile_key] = pc
    return sorted(plans.values(), key=lambda pc: pc.plan_id)


def _host() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu} x{os.cpu_count()}"


def _row(pc: PlannedCompile, arch: str, repeat: int, status: str, reason: str, rec: dict, provenance: dict) -> dict:
    const = dict(pc.plan.constexprs)
    cpu = rec.get("thread_cpu_ms", float("nan")) + rec.get("ptxas_cpu_ms", float("nan"))
    return {
        "plan_id": pc.plan_id,
        "candidate": pc.candidate.key,
        "problem": pc.problem.key,
        "template": pc.plan.template,
        **{k: const.get(k, "") for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
        "num_stages": pc.plan.num_stages,
        "num_warps": pc.plan.num_warps,
        "dtype": pc.plan.dtype,
        "layout": pc.problem.layout,
        "EVEN_K": const.get("EVEN_K", ""),
        "HINT_M": const.get("HINT_M", ""),
        "HINT_N": const.get("HINT_N", ""),
        "arch": arch,
        "repeat": repeat,
        "status": status,
        "reason": reason,
        **{k: rec.get(k, "") for k in ("wall_ms", "thread_cpu_ms", "ptxas_cpu_ms")},
        "cpu_ms": cpu if cpu == cpu else "",
        **{k: rec.get(k, "") for k in ("shared_bytes", "ptx_lines", "cubin_bytes")},
        **provenance,
    }


def done_plan_ids(out: Path, repeat: int) -> set[str]:
    """Plan ids already answered (any status) for `repeat` in out's CSVs: a resume skips them."""
    done = set()
    for path in out.glob("compile_times*.csv"):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if int(row["repeat"]) == repeat:
                    done.add(row["plan_id"])
    return done


def collect_compile_costs(
    out: str | Path,
    arch: str = "sm_90",
    shard: str = "0/1",
    workers: int = 0,
    limit: int = 0,
    repeat: int = 0,
    max_minutes: float = 0.0,
    log=print,
    progress=None,
) -> dict:
    """Compile this shard's plans not yet in `out` and append one row each; returns a summary.
    `log` hears a line of counts every 100 plans; `progress` ("compiles", done, total) after each."""
    import triton

    check_arch(arch)
    i, n = parse_shard(shard)
    provenance = {"triton": triton.__version__, "host": _host()}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plans = collection_plans()[i::n]
    done = done_plan_ids(out, repeat)
    todo = [pc for pc in plans if pc.plan_id not in done]
    already_done = len(plans) - len(todo)
    if limit:
        todo = todo[:limit]
    workers = max(1, min(workers or (os.cpu_count() or 1), len(todo) or 1))
    path = out / f"compile_times-{i}of{n}.csv"
    new_file = not path.exists()
    lock = threading.Lock()
    deadline = time.monotonic() + max_minutes * 60 if max_minutes > 0 else None
    env = dict(os.environ, KSELECT_CROSS_ARCH=arch)
    queue = list(reversed(todo))
    counts = {"ok": 0, "failed": 0, "crashed": 0, "timeout": 0}
    t0 = time.monotonic()

    with open(path, "a", newline="") as f, tempfile.TemporaryDirectory(prefix="kselect-cc-") as scratch:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()

        def take() -> PlannedCompile | None:
            with lock:
                if not queue or (deadline is not None and time.monotonic() > deadline):
                    return None
                return queue.pop()

        def compile_in(worker: Worker, pc: PlannedCompile) -> None:
            result = Path(scratch) / f"{pc.plan_id}.json"
            child = worker.request({"plan": plan_to_dict(pc.plan), "arch": arch, "result": str(result)}, TIMEOUT_S)
            rec: dict = {}
            status_reason = child.failure()
            if status_reason is None:
                try:
                    rec = json.loads(result.read_text())
                    status_reason = ("failed", rec["error"]) if "error" in rec else ("ok", "")
                except (OSError, ValueError):
                    status_reason = "crashed", child.missing_result()
            row = _row(pc, arch, repeat, *status_reason, rec, provenance)
            with lock:
                writer.writerow(row)
                f.flush()
                counts[row["status"]] += 1
                total = sum(counts.values())
                if progress:
                    progress("compiles", total, len(todo))
                if total % 100 == 0 or total == len(todo):
                    log(f"compile-cost: {total}/{len(todo)} plans, {counts}, {time.monotonic() - t0:.0f} s")

        drain_with_workers(take, compile_in, WORKER_MODULE, env, Path(scratch), workers)
    return {
        "out": str(path),
        "arch": arch,
        "shard": shard,
        "plans_in_shard": len(plans),
        "already_done": already_done,
        "compiled": counts,
        "left": len(queue),
        "seconds": round(time.monotonic() - t0, 1),
    }
