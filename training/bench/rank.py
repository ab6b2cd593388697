"""Time ranking one GEMM's whole EXHAUSTIVE + persistent-TMA space (featurise + predict).

    kselect bench rank --model models/h200-bf16.json [--reps 200] [--contend] [--decision]

Pins itself to one CPU core and one XGBoost thread, as a selector inside a compile would
run. Reports median and p90 wall milliseconds over repetitions after one warm-up call (which
also fills the candidate-encoding cache, as the first GEMM of a compile would), plus the
median thread CPU time, which is what other processes on a shared machine cannot inflate.

"decision" times what the predict-mode hook does per GEMM on a first compile, from the
moment Inductor hands over its choices: real Inductor KernelTemplateChoices (built on this
CPU for the same space) mapped to candidates, then `Selector.select` (decision key, a cache
miss on disk, ranking, policy, the queued cache write) -- the figure the issue's 5 ms
target is about, without a GPU. "early_decision" is the same decision taken before Inductor
generates anything (the default on CUDA): kselect enumerates the space itself instead of
mapping Inductor's choices; "early_cold" enumerates a size class for the first time.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_candidates


def bench(
    model: CostModel,
    fingerprint: dict,
    problem: Problem | None = None,
    reps: int = 200,
    pin: bool = True,
    guard: bool = False,
) -> dict:
    """guard: rank inside the selector's short GIL switch interval (selector/decide/switch_interval.py)."""
    from kselect.selector.decide.switch_interval import short_switch_interval

    with short_switch_interval() if guard else contextlib.nullcontext():
        out = _bench(model, fingerprint, problem, reps, pin)
    return {**out, "short_switch_interval": guard}


def _bench(model: CostModel, fingerprint: dict, problem: Problem | None, reps: int, pin: bool) -> dict:
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    model.set_threads(1)
    problem = problem or Problem(4096, 4096, 4096, "bf16", "nt")
    cands = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    model.rank(featurize_candidates(problem, cands, fingerprint))  # warm-up
    feat, total, cpu = [], [], []
    for _ in range(reps):
        c0, t0 = time.thread_time(), time.perf_counter()
        X = featurize_candidates(problem, cands, fingerprint)
        t1 = time.perf_counter()
        model.rank(X)
        t2, c2 = time.perf_counter(), time.thread_time()
        feat.append(t1 - t0)
        total.append(t2 - t0)
        cpu.append(c2 - c0)
    ms = lambda a, q: float(np.percentile(a, q) * 1e3)  # noqa: E731
    return {
        "problem": problem.key,
        "candidates": len(cands),
        "reps": reps,
        "threads": 1,
        "featurize_median_ms": ms(feat, 50),
        "total_median_ms": ms(total, 50),
        "total_p90_ms": ms(total, 90),
        "predict_median_ms": ms(np.subtract(total, feat), 50),
        "cpu_median_ms": ms(cpu, 50),
        "load_average_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "trees": int(model.n_trees),
    }


def inductor_ktcs(candidates) -> list:
    """Inductor KernelTemplateChoices for `candidates`, with the kwargs Inductor's Triton
    heuristics give them (layout/inputs unset: the hook reads template and params only)."""
    from torch._inductor.kernel.mm import (
        aten_mm,
        decompose_k_subgraph_template,
        mm_template,
        persistent_tma_mm_template,
    )
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    tile = {"mm": mm_template, "persistent_tma": persistent_tma_mm_template}
    out = []
    for c in candidates:
        if c.backend == "aten":
            template, kw = aten_mm, {}
        elif c.template == "decompose_k":
            template, kw = decompose_k_subgraph_template, {"k_split": c.get("k_split")}
        else:
            template = tile[c.template]
            kw = {"EVEN_K": True, "USE_FAST_ACCUM": False, "ACC_TYPE": "tl.float32", **c.kwargs}
        out.append(KernelTemplateChoice(template, DictKernelTemplateParams(kw), {}, None, None))
    return out


def bench_decision(model: CostModel, problem: Problem | None = None, reps: int = 200, pin: bool = True) -> dict:
    """Predict mode's whole per-GEMM decision on a first compile (see the module docstring),
    both ways the hook can take: "late" over Inductor's generated choices (mapped to
    candidates), "early" over kselect's own enumeration of the templates Inductor offers --
    warm (a GEMM whose size class an earlier GEMM enumerated) and cold (a new size class)."""
    import tempfile

    from torch._inductor.kernel.mm import aten_mm, mm_template, persistent_tma_mm_template

    from kselect.kernels.triton import space as space_mod
    from kselect.selector.compat import choice_candidates, enumeration
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.inductor.hook import Selector

    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    model.set_threads(1)
    problem = problem or Problem(4096, 4096, 4096, "bf16", "nt")
    cands = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    ktcs = inductor_ktcs(cands)
    templates = [aten_mm, mm_template, persistent_tma_mm_template]
    ranker = CostModelRanker(model, model.fingerprint)
    ranker.warm_up()
    device = {"fingerprint_id": model.fingerprint.get("fingerprint_id") or "bench"}

    def late():
        return choice_candidates.ktc_candidates(ktcs)

    def early(cold: bool):
        if cold:  # a size class no earlier GEMM had (the per-knob candidate memo stays warm)
            space_mod._tile_space.cache_clear()
        return enumeration.template_candidates(problem, templates, "EXHAUSTIVE")

    out = {"problem": problem.key, "candidates": len(cands), "reps": reps, "threads": 1}
    for name, to_candidates, is_early in (
        ("", late, False),
        ("early_", lambda: early(False), True),
        ("early_cold_", lambda: early(True), True),
    ):
        with tempfile.TemporaryDirectory() as cache_dir:
            sel = Selector(mode="predict", ranker=ranker, cache_dir=cache_dir)
            for rep in range(reps + 1):  # rep 0 warms the memos, as a compile's first GEMM
                t0, c0 = time.perf_counter(), time.thread_time()
                mapped = to_candidates()
                took = time.perf_counter() - t0, time.thread_time() - c0
                fields = {"out": problem.key, "rep": rep}  # a new key each time: always a cache miss
                sel.select("templates", problem, fields, device, mapped, mapped=took, early=is_early)
                sel.cache.flush()  # untimed: in a compile the writer is idle by the next GEMM's decision
            if sorted(mapped) != sorted(cands):
                raise RuntimeError(f"the {name or 'late '}candidates differ from the space they stand for")
        d = list(sel.decisions)[1:]
        ms = lambda key, q: float(np.percentile([x[key] for x in d], q))  # noqa: E731
        out.update(
            {
                f"{name}decision_median_ms": ms("ms", 50),
                f"{name}decision_p90_ms": ms("ms", 90),
                f"{name}map_median_ms": ms("map_ms", 50),
                f"{name}cpu_median_ms": ms("cpu_ms", 50),
                f"{name}phases_median_ms": {
                    p: float(np.median([x["phases_ms"][p] for x in d])) for p in d[0]["phases_ms"]
                },
            }
        )
    return {**out, "load_average_1min": os.getloadavg()[0], "cpus": os.cpu_count()}


def rank_timings(
    model_path: str, problem: Problem, reps: int = 200, contend: bool = False, decision: bool = False
) -> dict:
    """Ranking `problem`'s space with the model at `model_path`: idle; with `decision`, predict
    mode's whole per-GEMM decision too; with `contend`, beside one busy Python thread, with and
    without the selector's short GIL switch interval."""
    model = CostModel.load(model_path)
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    out = {"idle": bench(model, model.fingerprint, problem, reps)}
    if decision:
        out["decision"] = bench_decision(model, problem, reps)
    if contend:
        stop = threading.Event()
        if cpus:  # unpin: both threads may run on any core, as in a compile
            os.sched_setaffinity(0, cpus)

        def busy():  # pure-Python work that holds the GIL whenever it can
            x = 0
            while not stop.is_set():
                x += 1

        t = threading.Thread(target=busy, daemon=True)
        t.start()
        try:
            few = max(10, reps // 10)
            out["busy_thread"] = bench(model, model.fingerprint, problem, few, pin=False)
            out["busy_thread_guarded"] = bench(model, model.fingerprint, problem, few, pin=False, guard=True)
        finally:
            stop.set()
            t.join()
    return out
