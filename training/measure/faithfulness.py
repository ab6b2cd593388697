"""Is the collector's time the time a user gets? Three numbers per (shape, candidate):

  collector  -- our harness on our runtime-size kernels (kselect.kernels.timing);
  compiled   -- torch.compile(mode="max-autotune-no-cudagraphs") forced to that one
                choice (an InductorChoices filter keeps only it, so nothing is
                benchmarked), timed as a whole compiled function with
                triton.testing.do_bench (median, L2 flushed, warm-up) -- the real runtime;
  inductor   -- Inductor's own autotune number for the choice (feedback saver) when
                it benchmarks all of that shape's chosen candidates together.

Writes a CSV and a Markdown summary: collector/compiled ratio (median, p10-p90),
Spearman rank correlation within each shape, and where Inductor's number disagrees
with the real runtime.

Shapes are bf16 `x @ W^T` given as MxNxK, or any problem of a shapes CSV (`collect`'s format),
fp8 `_scaled_mm` in both scalings included: its candidates are ATen's `_scaled_mm` and the two
scaled templates, each compiled as `torch._scaled_mm` with the problem's scales.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem

log = logging.getLogger(__name__)

# Inductor's configuration for the whole Triton mm space: ATen and every exhaustive Triton
# config, persistent TMA included, compiled afresh (no cache hides a choice).
EXHAUSTIVE_TRITON_PATCHES = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "ATEN,TRITON",
    "max_autotune_gemm_search_space": "EXHAUSTIVE",
    "force_disable_caches": True,
    "triton.enable_persistent_tma_matmul": True,
}

# Shapes from the H200 baseline notes (stock mis-picks) plus decompose-k and TMA-friendly ones.
DEFAULT_SHAPES = [
    "333x7168x5120",
    "64x18176x4544",
    "7x3584x14336",
    "1024x9216x3072",
    "4096x3584x4096",
    "32x4096x4096",
    "16x4096x131072",
]


# the templates a faithfulness sample spreads over, per op (kernels/triton/space.py's names)
TEMPLATES = ("mm", "persistent_tma", "decompose_k")
SCALED_TEMPLATES = ("scaled_mm", "scaled_persistent_tma")


def templates_of(problem: Problem) -> tuple[str, ...]:
    return SCALED_TEMPLATES if problem.op == "scaled_mm" else TEMPLATES


def pick_candidates(problem: Problem, per_template: int = 3, large_per_template: int = 0) -> list[Candidate]:
    """ATen + a spread of DEFAULT configs of every template that applies, plus each tile
    template's `large_per_template` largest output tiles of the EXHAUSTIVE space (the tiles
    that win on large GEMMs; deterministic)."""
    from kselect.kernels.triton.space import triton_space

    out = [Candidate.make("aten", problem.op)]
    space = triton_space(problem, "default")
    for template in templates_of(problem):
        cs = [c for c in space if c.template == template]
        if cs:
            step = max(1, len(cs) // per_template)
            out += cs[::step][:per_template]
    if large_per_template:
        from kselect.kernels.triton.space import shared_memory_bytes
        from kselect.selector.model.features import DEFAULT_SMEM_OPTIN

        taken = {c.key for c in out}
        wide = triton_space(problem, "exhaustive")
        for template in templates_of(problem)[:2]:  # the tile templates (decompose-k has no tile)
            # tiles an H100/H200 can launch (232,448 B of shared memory per block)
            cs = [
                c
                for c in wide
                if c.template == template
                and c.key not in taken
                and shared_memory_bytes(c, problem.dtype_bytes) <= DEFAULT_SMEM_OPTIN
            ]
            # the widest tile, then the deepest K pipeline (BLOCK_K x stages) it fits
            cs.sort(
                key=lambda c: (
                    -c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"],
                    -c.kwargs["BLOCK_K"] * c.kwargs["num_stages"],
                    -c.kwargs["num_stages"],
                    c.key,
                )
            )
            out += cs[:large_per_template]
    return out


def _compile_mm(problem: Problem, keep, record=None, feedback=None):
    """The problem's GEMM compiled under max-autotune with only the choices `keep` accepts
    (`kernels/operands.gemm_fn`: `a @ b`, or `torch._scaled_mm` with its scales); (the compiled
    function, the operands it ran on)."""
    import torch
    from torch._inductor import config as ic

    from kselect.kernels.operands import gemm_fn, make_operands
    from kselect.selector.compat.autotune import add_feedback_saver
    from kselect.selector.compat.template_configs import choices_handler, make_filtering_choices

    torch._dynamo.reset()
    patches = {**EXHAUSTIVE_TRITON_PATCHES, "benchmark_epilogue_fusion": False}
    handler = make_filtering_choices(keep, record)
    remove = add_feedback_saver(feedback) if feedback else (lambda: None)
    try:
        with ic.patch(patches), choices_handler(handler):
            compiled = torch.compile(gemm_fn(problem), mode="max-autotune-no-cudagraphs", dynamic=False)
            ops = make_operands(problem, "cuda", seed=1)
            compiled(*ops.gemm_args)
            torch.cuda.synchronize()
    finally:
        remove()
    return compiled, ops


def collector_times(
    problem: Problem, cands: list[Candidate], rows: dict, backends=None, column: str = "collector"
) -> None:
    """Our harness on our kernels: `<column>_ms` and `<column>_rel_error` per candidate row.
    `backends` maps a backend name to the instance to use (default: the registry's)."""
    import torch

    from kselect.kernels.backend import get_backend
    from kselect.kernels.operands import reference, relative_error, rotating_operands
    from kselect.kernels.timing import time_runners

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = rotating_operands(problem, l2)
    base = sets[0]
    ref = reference(problem, base)
    for c in cands:
        backend = (backends or {}).get(c.backend) or get_backend(c.backend)
        try:
            compiled = backend.compile(c, problem)
            runners = [backend.runner(compiled, s) for s in sets]
            runners[0]()
            torch.cuda.synchronize()
            rows[c.key][f"{column}_rel_error"] = relative_error(base.out, ref)
            rows[c.key][f"{column}_ms"] = time_runners(runners).median_ms
        except Exception as exc:
            rows[c.key][f"{column}_error"] = f"{type(exc).__name__}: {exc}"[:300]


def inductor_autotune_times(problem: Problem, cands: list[Candidate], rows: dict) -> None:
    """Inductor's own autotune number per candidate, all of them benchmarked together."""
    keys = {c.key for c in cands}

    def saver(timings, name, input_nodes, choices, profiled_time_fn, precompile_times=None):
        from kselect.selector.compat.choice_candidates import op_choice_candidate

        for ch, ms in timings.items():
            cand = op_choice_candidate(ch, problem.op)
            if cand is not None and cand.key in rows:
                rows[cand.key]["inductor_ms"] = float(ms)

    try:
        _compile_mm(problem, keep=lambda c: c.key in keys, feedback=saver)
    except Exception as exc:
        log.warning("inductor autotune compile failed for %s: %s", problem.key, exc)


def compiled_times(problem: Problem, cands: list[Candidate], rows: dict) -> None:
    """The compiled program forced to each candidate, timed as a user runs it."""
    import torch
    import triton

    from kselect.kernels.operands import reference, relative_error, rotating_operands
    from kselect.kernels.timing import time_runners

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for c in cands:
        try:
            fn, ops = _compile_mm(problem, keep=lambda x, k=c.key: x.key == k)
            out = fn(*ops.gemm_args)
            rows[c.key]["compiled_rel_error"] = relative_error(out, reference(problem, ops))
            # Real runtime: the compiled function itself, under CUDA graphs (as
            # mode="max-autotune" runs it) with cold-L2 rotating inputs ...
            sets = rotating_operands(problem, l2, first=ops)
            rows[c.key]["compiled_ms"] = time_runners(
                [lambda o=o: fn(*o.gemm_args) for o in sets], target_ms=0.5, replays=9
            ).median_ms
            del sets
            # ... and the plain do_bench number, launch overhead included, for reference.
            rows[c.key]["compiled_dobench_ms"] = triton.testing.do_bench(
                lambda: fn(*ops.gemm_args), warmup=50, rep=200, return_mode="median"
            )
        except Exception as exc:
            rows[c.key]["compiled_error"] = f"{type(exc).__name__}: {exc}"[:300]


def candidate_rows(problem: Problem, cands: list[Candidate]) -> dict:
    return {c.key: {"problem": problem.key, "candidate": c.key, "template": f"{c.backend}:{c.template}"} for c in cands}


def measure_problem(problem: Problem, cands: list[Candidate]) -> list[dict]:
    """collector, Inductor's autotune number and the compiled time for each candidate, all in
    the problem's fp32 math (kernels/precision.py) for an fp32 GEMM."""
    from kselect.kernels.precision import fp32_math

    rows = candidate_rows(problem, cands)
    with fp32_math(problem.dtype):
        collector_times(problem, cands, rows)
        inductor_autotune_times(problem, cands, rows)
        compiled_times(problem, cands, rows)
    return list(rows.values())


def spearman(x, y) -> float:
    """Spearman's rank correlation (scipy's; ties take their average rank); NaN under 3 pairs."""
    from scipy.stats import spearmanr

    if len(x) < 3:
        return float("nan")
    return float(spearmanr(list(x), list(y)).statistic)


def summarize(df) -> dict:
    import numpy as np

    ok = df.dropna(subset=["collector_ms", "compiled_ms"]).copy()
    ok["ratio"] = ok["collector_ms"] / ok["compiled_ms"]
    per_shape = {p: spearman(g["collector_ms"], g["compiled_ms"]) for p, g in ok.groupby("problem")}
    res = {
        "pairs": int(len(ok)),
        "shapes": int(ok["problem"].nunique()),
        "ratio_median": float(ok["ratio"].median()) if len(ok) else float("nan"),
        "ratio_p10": float(ok["ratio"].quantile(0.1)) if len(ok) else float("nan"),
        "ratio_p90": float(ok["ratio"].quantile(0.9)) if len(ok) else float("nan"),
        "abs_dev_median": float((ok["ratio"] - 1).abs().median()) if len(ok) else float("nan"),
        "spearman_by_shape": per_shape,
        "spearman_min": float(np.nanmin(list(per_shape.values()))) if per_shape else float("nan"),
    }
    if "inductor_ms" in ok:
        ind = ok.dropna(subset=["inductor_ms"])
        res["inductor_vs_compiled_median"] = (
            float((ind["inductor_ms"] / ind["compiled_ms"]).median()) if len(ind) else float("nan")
        )
        res["inductor_spearman_by_shape"] = {
            p: spearman(g["inductor_ms"], g["compiled_ms"]) for p, g in ind.groupby("problem")
        }
    return res


def bf16_problems(shapes: list[str]) -> list[Problem]:
    """Each `MxNxK` of `shapes` as a bf16 `x @ W^T` problem; a ValueError naming a bad one."""
    problems = []
    for spec in shapes:
        try:
            m, n, k = (int(x) for x in spec.lower().split("x"))
        except ValueError:
            raise ValueError(f"shape {spec!r}: expected MxNxK, e.g. 4096x4096x4096") from None
        problems.append(Problem(m, n, k, "bf16", "nt", "mm"))
    return problems


def spread_sample(problems: list[Problem], n: int) -> list[Problem]:
    """`n` of `problems` at evenly spaced places of their order, the first and the last among
    them (a shapes file runs by model and M, so the sample spans both); all where n <= 0 or n
    covers them."""
    if n <= 0 or n >= len(problems):
        return list(problems)
    if n == 1:
        return [problems[0]]
    return [problems[round(i * (len(problems) - 1) / (n - 1))] for i in range(n)]


def measure_faithfulness(
    problems: list[Problem],
    out: str | Path,
    per_template: int = 3,
    large_per_template: int = 0,
    log=print,
    progress=None,
) -> dict:
    """Measure each problem on this GPU into out/faithfulness.csv (rewritten after every shape)
    and out/summary.json; returns the summary. `log` hears a line per shape; `progress`
    ("shapes", done, total) after each."""
    import pandas as pd

    from kselect.kernels.timing import warm_gpu

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    warm_gpu()
    rows = []
    for done, problem in enumerate(problems, 1):
        t0 = time.time()
        rows += measure_problem(problem, pick_candidates(problem, per_template, large_per_template))
        pd.DataFrame(rows).to_csv(out / "faithfulness.csv", index=False)
        log(f"{problem.key}: {time.time() - t0:.0f} s")
        if progress:
            progress("shapes", done, len(problems))
    summary = summarize(pd.DataFrame(rows))
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
