"""Re-time a dataset's best candidates as Inductor generates them: faithful labels at the top.

Why: the collector times its own runtime-size Triton kernels (kernels/triton/kernels.py), the
same algorithms as Inductor's templates but not the same code. On some shapes the two differ
by 10 % or more in either direction (reports/2026-12-02-faithfulness-h200; reports/2026-12-03-decision-per-size-class-predict-compile section
4: on lm_head 8x128256x4096 the collector times the persistent-TMA tiles 9-11 % faster than
they run compiled, so the labels favour Triton where cuBLAS is as fast). What the selector
hands a user is Inductor's kernel, so the labels that decide a pick -- each shape's fastest
candidates and ATen -- should be Inductor's kernels' times.

How: per shape, one max-autotune compile of the one-GEMM function with kselect in verify mode,
its ranker the dataset's own times restricted to the shape's `top` fastest Triton candidates
(+ ATen), kept whatever the gaps. Inductor generates just those choices; verify's own
measurement (selector/verify/timing.py: parallel precompile, every result checked against
ATen, the collector's CUDA-graph harness over L2-cold operands) times them. Nothing here
re-implements a timing: it is the selector's verify path, recorded.

Output: a dataset directory (same schema; `space` = "retime") inside the collector's, by
default `<data>/retimed`; `training.labels.apply_retimed` folds it into the labels. Work is
split like collection: `--shard i/n` of the shapes, one worker process per visible GPU; a
worker writes each shape's rows atomically as it finishes it, a rerun skips finished shapes,
and a worker that dies is restarted past the shape it was on (recorded as failed).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kselect.kernels.problem import Problem
from kselect.training.data.dataset import RETIMED_DIR, DatasetDir, load_dataset, row_problem
from kselect.training.measure.collect_plan import CollectError, parse_shard, shard_problems
from kselect.training.measure.fault_injection import FAULT_ENV, FaultInjector
from kselect.training.measure.journal import inflight_path, plan_path, read_inflight, write_inflight
from kselect.training.measure.supervisor import run_supervised, supervise_all

log = logging.getLogger(__name__)

RETIME_SPACE = "retime"
# backend:template families re-timed by default: the Triton tiles. Decompose-k is a subgraph
# choice without a run function, which verify cannot time itself (Inductor would benchmark
# that set and nothing would be recorded), so it is refused.
TEMPLATES = ("triton:mm", "triton:persistent_tma")
UNTIMEABLE = ("decompose_k",)
MAX_RESTARTS = 20
_MEASURED = (
    "status",
    "error",
    "time_ms",
    "time_min_ms",
    "time_max_ms",
    "spread",
    "noisy",
    "reps",
    "method",
    "rel_error",
    "compile_s",
    "oracle",
    "space",
    "fingerprint_id",
    "worker",
    "collected_at",
)


class RetimeError(ValueError):
    """Bad re-timing arguments (a dataset without rows, an unknown template, ...)."""


@dataclass
class ShapeWork:
    """One shape to re-time: its problem, the candidate rows to time (ATen first), and how much
    faster than ATen the collector timed its best Triton candidate (the priority)."""

    problem: Problem
    rows: list[dict]
    claimed_speedup: float


def plan_shapes(
    df: pd.DataFrame, top: int = 6, within: float = 1.05, templates=TEMPLATES, all_shapes: bool = False
) -> list[ShapeWork]:
    """The shapes whose labels decide template-vs-ATen picks, most claimed Triton gain first.

    A shape qualifies when the collector timed one of its `templates` (backend:template)
    candidates within `within` x ATen's time (or faster), or always with `all_shapes`; its
    work is ATen plus its `top` fastest such candidates."""
    if top < 1:
        raise RetimeError(f"--top must be >= 1, got {top}")
    bad = [t for t in templates if t.count(":") != 1 or t.split(":")[1] in UNTIMEABLE]
    if bad or not templates:
        raise RetimeError(
            f"templates must be backend:template pairs verify can time (not "
            f"{', '.join(UNTIMEABLE)}), e.g. {','.join(TEMPLATES)}; got {list(templates) or bad}"
        )
    ok = df[(df["status"] == "ok") & (df["time_ms"] > 0)]
    if not len(ok):
        raise RetimeError("the dataset has no successful measurements to re-time")
    family = ok["backend"] + ":" + ok["template"]
    work = []
    for key, rows in ok.groupby("problem_key", sort=True):
        aten = rows[rows["backend"] == "aten"].sort_values("time_ms")
        tiles = rows[family.loc[rows.index].isin(list(templates))]
        if aten.empty or tiles.empty:
            continue
        best = tiles.nsmallest(top, "time_ms", keep="first")
        speedup = float(aten["time_ms"].iloc[0] / best["time_ms"].iloc[0])
        if not all_shapes and speedup < 1.0 / within:
            continue
        problem = row_problem(rows.iloc[0])
        if problem.key != key:
            raise RetimeError(f"dataset row key {key!r} does not match its columns ({problem.key})")
        picked = pd.concat([aten.iloc[:1], best])
        work.append(ShapeWork(problem, picked.to_dict("records"), speedup))
    work.sort(key=lambda w: (-w.claimed_speedup, w.problem.key))
    return work


# ---------------------------------------------------------------------------- worker
@dataclass
class RetimePlan:
    """What one worker re-times; serialised to JSON for the worker process."""

    out: str
    shapes: list[dict]  # [{"problem": {...}, "rows": [dataset rows]}]
    deadline: float = 0.0
    worker: str = "w0"
    fingerprint_id: str = ""
    device: str = "cuda"


def _provenance(plan: RetimePlan) -> dict:
    """The provenance columns of every row this plan's worker writes."""
    return {"oracle": False, "space": RETIME_SPACE, "fingerprint_id": plan.fingerprint_id, "worker": plan.worker}


def result_rows(rows: list[dict], record: dict | None, reason: str, common: dict) -> list[dict]:
    """The dataset rows of one re-timed shape: each requested candidate with verify's time, or
    a failed status naming why it has none (dropped by verify, never generated, not measured)."""
    out = []
    for r in rows:
        key = r["candidate_key"]
        new = {k: v for k, v in r.items() if k not in _MEASURED}
        new.update(
            status="ok",
            error="",
            time_ms=float("nan"),
            time_min_ms=float("nan"),
            time_max_ms=float("nan"),
            spread=float("nan"),
            noisy=False,
            reps=0,
            method="",
            rel_error=float("nan"),
            compile_s=0.0,
            collected_at=time.time(),
            oracle=False,
            space=RETIME_SPACE,
            fingerprint_id="",
            worker="",
        )
        new.update(common)
        ms = (record or {}).get("ms", {}).get(key)
        dropped = (record or {}).get("dropped", {}).get(key)
        if dropped:
            status = (
                "wrong_result"
                if dropped.startswith("wrong result")
                else ("compile_error" if dropped.startswith("compile failed") else "launch_error")
            )
            new.update(status=status, error=dropped[:500])
        elif ms is None or not ms == ms or ms == float("inf"):
            new.update(status="launch_error", error=(reason or "Inductor did not generate this choice")[:500])
        else:
            stats = (record or {}).get("stats", {}).get(key, {})
            new.update(
                time_ms=float(ms),
                method=record.get("method", ""),
                **{k: stats[k] for k in ("time_min_ms", "time_max_ms", "spread", "reps", "noisy") if k in stats},
            )
        out.append(new)
    return out


def retime_shape(problem: Problem, selector, device: str) -> tuple[dict | None, str]:
    """One max-autotune compile of `problem`'s GEMM under `selector` (verify, the shape's rows
    as its ranker): (verify's measurement record of the kept set, or None; why not)."""
    import torch
    from torch._inductor import config as ic

    from kselect.kernels.operands import gemm_fn, make_operands
    from kselect.kernels.precision import fp32_math

    torch._dynamo.reset()
    n_meas = len(selector.measurements)
    ops = make_operands(problem, device, seed=1)
    patches = {
        "force_disable_caches": True,
        "max_autotune": True,
        "max_autotune_gemm_backends": "ATEN,TRITON" if device == "cuda" else "ATEN,CPP",
        "triton.enable_persistent_tma_matmul": True,
    }
    math = fp32_math(problem.dtype if device == "cuda" else "")  # Inductor reads it as it compiles
    with warnings.catch_warnings(record=True) as caught, ic.patch(patches), math:
        warnings.simplefilter("always")
        fn = torch.compile(gemm_fn(problem), dynamic=False, mode="max-autotune-no-cudagraphs")
        fn(*ops.gemm_args)
        if device == "cuda":
            torch.cuda.synchronize()
    mine = [m for m in list(selector.measurements)[n_meas:] if m["problem"] == problem.key]
    why = "; ".join(str(w.message) for w in caught if "kselect" in str(w.message))[:400]
    if not mine:
        return None, why or "kselect did not measure this shape (no decision for it)"
    return mine[-1], why


def run_worker(plan: RetimePlan) -> int:
    """Re-time the plan's shapes on this process's device; 0 when done or out of time."""
    import torch

    from kselect.selector.decide.rankers import MeasuredRanker
    from kselect.selector.inductor import lifecycle as ksi

    ds = DatasetDir(Path(plan.out))
    done = set(ds.load(on_corrupt="quarantine")["problem_key"]) if ds.exists() else set()
    todo = [s for s in plan.shapes if Problem.from_dict(s["problem"]).key not in done]
    if not todo:
        return 0
    inflight = inflight_path(plan)
    inflight.parent.mkdir(parents=True, exist_ok=True)
    if plan.device == "cuda":
        from kselect.kernels.timing import warm_gpu

        warm_gpu()
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device=plan.device))  # process start-up, once
    table = {
        Problem.from_dict(s["problem"]).key: {r["candidate_key"]: float(r["time_ms"]) for r in s["rows"]} for s in todo
    }
    k = max(len(row) for row in table.values())
    from torch._inductor import config as ic

    ic.max_autotune_gemm_search_space = (
        "DEFAULT"  # as a user configures it; kselect ranks its own space inside the GEMMs it decides
    )
    selector = ksi.enable(
        "verify",
        k=k,
        ranker=MeasuredRanker(table, name="retime"),
        adaptive_k=False,
        verify_timing="kselect",
        keep_aten=True,
    )
    fault = FaultInjector.from_env()
    try:
        for s in todo:
            problem = Problem.from_dict(s["problem"])
            if plan.deadline and time.time() > plan.deadline:
                log.warning("time budget spent; stopping before %s", problem.key)
                break
            write_inflight(inflight, s["problem"])
            fault.tick()
            t0 = time.time()
            try:
                record, why = retime_shape(problem, selector, plan.device)
            except Exception as exc:  # noqa: BLE001 -- a shape that cannot compile is a result
                record, why = None, f"compile failed: {type(exc).__name__}: {exc}"
            # compile_s: the whole shape (compile, parallel precompile, timing), on every row
            rows = result_rows(s["rows"], record, why, dict(_provenance(plan), compile_s=time.time() - t0))
            ds.append(rows, plan.worker)
            inflight.unlink(missing_ok=True)
            timed = sum(1 for r in rows if r["status"] == "ok")
            print(
                f"[retime {plan.worker}] {problem.key}: {timed}/{len(rows)} timed in "
                f"{time.time() - t0:.1f} s" + (f" ({why})" if why and not timed else ""),
                flush=True,
            )
    finally:
        ksi.disable()
    return 0


# ------------------------------------------------------------------------ driver
def _supervise(plan: RetimePlan, gpu: int | None) -> int:
    """One worker in a child process on `gpu`; after a crash the shape in flight is recorded as
    failed (every candidate, naming the exit code) and the worker restarts past it."""
    # the worker enables kselect itself: no KSELECT_MODE etc. (torch's autoload would act on
    # them); the collector's fault hook passes, for tests
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSELECT_") or k == FAULT_ENV}

    def record_inflight(code: int) -> None:
        inflight = inflight_path(plan)
        record = read_inflight(inflight)
        if record is None:
            return
        key = Problem.from_dict(record).key
        shape = next(s for s in plan.shapes if Problem.from_dict(s["problem"]).key == key)
        why = f"worker died with exit code {code} while re-timing this shape"
        DatasetDir(Path(plan.out)).append(result_rows(shape["rows"], None, why, _provenance(plan)), plan.worker)
        inflight.unlink()
        log.warning("%s: %s (%s)", plan.worker, why, key)

    crashes = run_supervised("kselect.training.measure.retime", plan, gpu, env, record_inflight, MAX_RESTARTS).crashes
    plan_path(plan).unlink(missing_ok=True)
    return crashes


def default_out(data: str | Path) -> Path:
    """Where re-timed rows go and where training looks for them: <data>/retimed."""
    return Path(data) / RETIMED_DIR


def retime(
    data: str | Path,
    out: str | Path | None = None,
    *,
    top: int = 6,
    within: float = 1.05,
    templates=TEMPLATES,
    all_shapes: bool = False,
    shard: str = "0/1",
    max_minutes: float = 0.0,
    gpus: list[int] | None = None,
    device: str = "cuda",
    max_shapes: int = 0,
) -> dict:
    """Re-time this shard of the dataset's qualifying shapes into `out` (default <data>/retimed)."""
    import torch

    from kselect.training.measure.hardware_record import collect_fingerprint

    out = Path(out) if out else default_out(data)
    src = DatasetDir(Path(data))
    work = plan_shapes(load_dataset(data), top=top, within=within, templates=templates, all_shapes=all_shapes)
    mine = {p.key for p in shard_problems([w.problem for w in work], parse_shard(shard))}
    work = [w for w in work if w.problem.key in mine]  # keeps the priority order
    if max_shapes:
        work = work[:max_shapes]
    if device == "cpu":
        gpus = [None]
    elif device != "cuda":
        raise CollectError(f"--device must be cuda or cpu, got {device!r}")
    else:
        gpus = list(range(torch.cuda.device_count())) if gpus is None else gpus
        if not gpus:
            raise CollectError("no GPU visible: re-timing runs Inductor's kernels and needs CUDA")
    fp = collect_fingerprint(gpus[0] or 0) if device == "cuda" else src.read_fingerprint()
    if src.fingerprint_path.exists() and src.read_fingerprint().get("fingerprint_id") != fp.get("fingerprint_id"):
        raise CollectError(
            f"{data} was measured on another device ({src.read_fingerprint().get('fingerprint_id')}, "
            f"this one is {fp.get('fingerprint_id')}): re-time it where it was collected"
        )
    DatasetDir(out).write_fingerprint(fp)
    deadline = time.time() + 60 * max_minutes if max_minutes else 0.0
    shapes = [{"problem": w.problem.to_dict(), "rows": [_jsonable(r) for r in w.rows]} for w in work]
    plans = [
        RetimePlan(
            out=str(out),
            shapes=shapes[i :: len(gpus)],
            deadline=deadline,
            worker=f"retime-s{shard.replace('/', 'of')}g{g if g is not None else 'cpu'}",
            fingerprint_id=fp["fingerprint_id"],
            device=device,
        )
        for i, g in enumerate(gpus)
    ]
    t0 = time.time()
    crashes = supervise_all(plans, gpus, _supervise)
    have = DatasetDir(out).load(on_corrupt="skip")
    mine_done = have[have["problem_key"].isin(mine)]
    return {
        "shapes_planned": len(work),
        "shapes_done": int(mine_done["problem_key"].nunique()),
        "rows_timed": int((mine_done["status"] == "ok").sum()),
        "workers": len(plans),
        "crashes": sum(crashes),
        "seconds": round(time.time() - t0, 1),
        "out": str(out),
    }


def _jsonable(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = None if isinstance(v, float) and v != v else v
    return out


if __name__ == "__main__":  # worker entry point: python -m kselect.training.measure.retime PLAN.json
    from kselect.training.measure.worker_process import die_with_supervisor

    die_with_supervisor()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run_worker(RetimePlan(**json.loads(Path(sys.argv[1]).read_text()))))
