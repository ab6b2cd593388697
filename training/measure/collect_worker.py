"""The collection worker: one process per GPU, measuring its plan's problems candidate by
candidate, rows written to atomic part files, the unit in flight journalled
(training/measure/journal.py). Entry point: python -m kselect.training.measure.collect_worker PLAN.json."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from kselect.kernels.backend import CandidateError, get_backend
from kselect.kernels.candidate_list import candidate_list
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import shared_memory_bytes
from kselect.selector.model.features import DEFAULT_SMEM_OPTIN
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.rows import SHAPE_FAILED, row_for, shape_failure_rows
from kselect.training.measure.collect_plan import CollectPlan
from kselect.training.measure.fault_injection import FaultInjector
from kselect.training.measure.journal import inflight_path, write_inflight
from kselect.training.measure.worker_process import (
    die_with_supervisor,
)

log = logging.getLogger(__name__)
FLUSH_ROWS = 400
FLUSH_SECONDS = 30.0


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


if __name__ == "__main__":  # worker entry point: python -m kselect.training.measure.collect_worker PLAN.json
    die_with_supervisor()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run_worker(CollectPlan(**json.loads(Path(sys.argv[1]).read_text()))))
