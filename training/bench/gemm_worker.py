"""One `kselect bench gemm` variant in its own fresh process (training/bench/gemm.py spawns it):
each shape compiled as a one-GEMM function, its compile timed, what Inductor and kselect
benchmarked counted, the chosen kernel timed under CUDA graphs with cold rotating operands.

    python -m kselect.training.bench.gemm_worker PLAN.json
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from kselect.training.bench.common import GemmCounter, policy_keywords
from kselect.training.bench.gemm_variants import VARIANTS


def measure_shape(problem, variant: str, selector, device: str) -> dict:
    """One shape compiled by `variant` in this process (`selector`: kselect enabled for a kselect
    variant, else None): its compile, what Inductor and kselect benchmarked and chose, the chosen
    kernel's runtime and its error against an fp32 reference; one results.jsonl row. An fp32
    GEMM is compiled and timed in its problem's math (IEEE for "fp32", TF32 for "tf32"), the
    setting Inductor, kselect and cuBLAS read, as a user's `set_float32_matmul_precision` sets it;
    the row's `fp32_math` records what they read."""
    from kselect.kernels.precision import FP32_MATH, fp32_math, fp32_math_dtype

    with fp32_math(problem.dtype):
        row = _measure_shape(problem, variant, selector, device)
        if problem.dtype in FP32_MATH:
            row["fp32_math"] = fp32_math_dtype()
    return row


def _measure_shape(problem, variant: str, selector, device: str) -> dict:
    import torch
    from torch._inductor import config as ic

    from kselect.kernels.operands import TOLERANCE, gemm_fn, make_operands, reference, relative_error, rotating_operands
    from kselect.kernels.timing import time_runners
    from kselect.selector.compat.autotune import add_feedback_saver

    space, mode = VARIANTS[variant]
    row = {
        "variant": variant,
        "problem": problem.key,
        "M": problem.M,
        "N": problem.N,
        "K": problem.K,
        "op": problem.op,
        "layout": problem.layout,
    }
    torch._dynamo.reset()
    patches = {"force_disable_caches": True}
    if space is not None:
        patches.update(
            {
                "max_autotune": True,
                "max_autotune_gemm_backends": "ATEN,TRITON",
                "triton.enable_persistent_tma_matmul": True,
            }
        )
        if mode is None:  # stock; with kselect, enable() set the space (and remembers DEFAULT)
            patches["max_autotune_gemm_search_space"] = space
    fb = GemmCounter()
    n_dec = len(selector.decisions) if selector is not None else 0
    n_meas = len(selector.measurements) if selector is not None else 0
    stats0 = dict(selector.stats) if selector is not None else {}
    ops = make_operands(problem, device, seed=1)
    remove = add_feedback_saver(fb)
    try:
        with ic.patch(patches):
            kw = {"mode": "max-autotune-no-cudagraphs"} if space is not None else {}
            compiled = torch.compile(gemm_fn(problem), dynamic=False, **kw)
            sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
            t0 = time.perf_counter()
            out = compiled(*ops.gemm_args)
            sync()
            row["compile_s"] = time.perf_counter() - t0
    finally:
        remove()
    row["rel_error"] = relative_error(out, reference(problem, ops))
    row["correct"] = bool(row["rel_error"] <= TOLERANCE[problem.dtype])
    row["autotuned"] = len(fb.calls)
    row["benchmarked"] = sum(c["choices"] for c in fb.calls)  # caches are off: every call is fresh
    row["chosen"] = fb.calls[-1]["winner"] if fb.calls else ""
    row["chosen_inductor_ms"] = fb.calls[-1]["winner_inductor_ms"] if fb.calls else None
    if selector is not None:
        new = list(selector.decisions)[n_dec:]
        row["decisions"] = len(new)
        row["decision_ms"] = sum(d["ms"] for d in new)
        row["early_decisions"] = sum(1 for d in new if d.get("early"))  # decided before generation
        phases: dict = {}
        for d in new:
            for name, ms in d.get("phases_ms", {}).items():
                phases[name] = phases.get(name, 0.0) + ms
        row["decision_phases_ms"] = phases  # summed over this GEMM's decisions, like decision_ms
        row["decision_cpu_ms"] = sum(d.get("cpu_ms", 0.0) for d in new)  # wall >> CPU: the thread waited
        # the ranker's load and its warm-up for this shape's graph, before the decisions (not in them)
        row["setup_ms"] = sum(d.get("setup_ms", 0.0) for d in new)
        row["kept"] = new[-1]["kept"] if new else []
        row["seen"] = max((d["seen"] for d in new), default=0)
        row["fallbacks"] = selector.stats["fallbacks"] - stats0.get("fallbacks", 0)
        measured = list(selector.measurements)[n_meas:]  # verify mode timing the kept set itself
        row["kselect_measured"] = sum(len(m["ms"]) for m in measured)
        row["benchmarked"] += row["kselect_measured"]
        if measured:
            row["chosen"] = measured[-1]["winner"]
            row["kselect_measured_ms"] = measured[-1]["ms"]
            row["kselect_measure_wall_ms"] = sum(m["wall_ms"] for m in measured)
        if not row["chosen"] and len(row["kept"]) == 1:
            row["chosen"] = row["kept"][0]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size if device == "cuda" else 32 << 20
    sets = rotating_operands(problem, l2, device, first=ops)
    t = time_runners([lambda o=o: compiled(*o.gemm_args) for o in sets], target_ms=0.5, replays=9, device=device)
    row.update(kernel_ms=t.median_ms, kernel_spread=t.spread)
    return row


def run_worker(plan: dict) -> int:
    """One variant over its shapes, in this (fresh) process; one JSON line per shape."""
    import torch

    from kselect.kernels.problem import Problem
    from kselect.selector.inductor import lifecycle as ksi

    variant, device = plan["variant"], plan["device"]
    _, mode = VARIANTS[variant]
    if device == "cuda":
        from kselect.kernels.timing import warm_gpu

        warm_gpu()
    # One throw-away compile first: process-wide import and initialisation costs are not tuning.
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device=device))
    torch._dynamo.reset()
    # Then wait, untimed, until Inductor's compile-worker pool takes work. It starts with the
    # first compile and takes ~8-10 s of the H200 host's CPUs; until it is up, the shapes' own
    # compiles and decisions run against its start-up. Decisions were ~1.5x slower over the
    # first 5-7 shapes (~10 s) of every process without this wait (reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise s3):
    # the pool is the likely cause, which the next device run checks.
    from kselect.selector.compat.compile_pool import warm_compile_pool

    pool_s = warm_compile_pool()
    selector = None
    if mode:
        from torch._inductor import config as ic

        ic.max_autotune_gemm_search_space = "DEFAULT"  # what the user has configured
        selector = ksi.enable(mode, model=plan.get("model") or None, **policy_keywords(plan))
    out = Path(plan["out"])
    for d in plan["problems"]:
        problem = Problem.from_dict(d)
        if plan["deadline"] and time.time() > plan["deadline"]:
            row = {"variant": variant, "problem": problem.key, "skipped": "time budget spent"}
        else:
            try:
                row = measure_shape(problem, variant, selector, device)
            except Exception as exc:  # noqa: BLE001 -- a failing shape is a result, not a crash
                row = {"variant": variant, "problem": problem.key, "error": f"{type(exc).__name__}: {exc}"[:500]}
        row["repeat"] = plan.get("repeat", 0)
        row["compile_pool_s"] = None if pool_s is None else round(pool_s, 2)  # this process's wait
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(
            f"[{variant}] {problem.key}: "
            + ", ".join(
                f"{k}={row[k]:.4g}" if isinstance(row.get(k), float) else f"{k}={row.get(k)}"
                for k in ("compile_s", "benchmarked", "kernel_ms", "chosen", "error", "skipped")
                if k in row
            ),
            flush=True,
        )
    if selector is not None:
        ksi.disable()
    del torch
    return 0


if __name__ == "__main__":  # worker: python -m kselect.training.bench.gemm_worker PLAN.json
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run_worker(json.loads(Path(sys.argv[1]).read_text())))
