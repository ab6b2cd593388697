"""`kselect bench gemm`: per-GEMM tuning time and chosen-kernel speed, stock vs kselect.

Every variant compiles each shape of a shapes file as a one-GEMM function (`a @ b`, with the
layout's transposes as views, + bias for addmm) in its own process with fresh Inductor and
Triton cache directories, so nothing one variant compiled helps another:
- plain: torch.compile without max-autotune (the compile-time floor; no GEMM tuning);
- default / exhaustive: stock max-autotune over Inductor's DEFAULT / EXHAUSTIVE config lists;
- kselect-verify / kselect-predict: max-autotune as a user runs it (DEFAULT configured) with
  `kselect.selector.enable(mode)`, which ranks the EXHAUSTIVE list for the GEMMs it decides and
  prunes it before code generation (verify: adaptive top-k + ATen benchmarked; predict: top-1, nothing);
  a GEMM kselect cannot rank falls back to the DEFAULT list.
All max-autotune variants enable persistent-TMA templates and disable CUDA graphs in the
compiled function. Measured per (variant, shape): compile wall time (tuning time = compile
time minus plain's), the number of choices Inductor benchmarked (its own feedback saver), the
chosen kernel, its real runtime (the compiled function under CUDA graphs with cold rotating
operands: kernels/timing, the collector's harness) and its error against an fp32 reference.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kselect.training.bench.common import (
    GemmCounter,
    cold_cache_env,
    policy_keywords,
    ranker_ident,
)
from kselect.training.bench.run_order import alternating_rounds

log = logging.getLogger(__name__)

VARIANTS = {
    # name: (max-autotune search space or None for plain, kselect mode or None)
    # (run in this order, cheapest first, so a time budget cuts stock EXHAUSTIVE, not kselect)
    "plain": (None, None),
    "kselect-predict": ("EXHAUSTIVE", "predict"),
    "kselect-verify": ("EXHAUSTIVE", "verify"),
    "default": ("DEFAULT", None),
    "exhaustive": ("EXHAUSTIVE", None),
}
# Targets of the issue (verify vs stock).
TARGETS = {
    "verify_vs_exhaustive_kernel": 1.01,
    "verify_vs_default_kernel_speedup": 1.05,
    "verify_tuning_vs_default": 1 / 3,
    "verify_tuning_vs_exhaustive": 1 / 20,
    "predict_decision_ms": 5.0,
}


class BenchError(ValueError):
    """Bad benchmark arguments (unknown variant, empty shape list, ...)."""


def parse_variants(spec: str) -> list[str]:
    names = [v.strip() for v in spec.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise BenchError(f"unknown variant(s) {bad or spec!r}: choose from {', '.join(VARIANTS)}")
    return names


# ------------------------------------------------------------------------------ worker
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
            compiled = torch.compile(gemm_fn(problem.op), dynamic=False, **kw)
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
                row = _measure_shape(problem, variant, selector, device)
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


# ------------------------------------------------------------------------------ driver
def _spawn(plan: dict, timeout: float | None) -> str:
    """Run one variant in a fresh process with cold caches; returns '' or why it stopped."""
    tmp = tempfile.mkdtemp(prefix=f"kselect-bench-{plan['variant']}-")
    env = cold_cache_env(Path(tmp))
    plan_path = Path(tmp) / "plan.json"
    plan_path.write_text(json.dumps(plan))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kselect.training.bench.gemm", str(plan_path)], env=env, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"killed after {timeout:.0f} s (time budget)"
    return "" if proc.returncode == 0 else f"worker exited with status {proc.returncode}"


def exhaustive_subset(problems, n: int):
    """The n shapes with the smallest EXHAUSTIVE space (stock EXHAUSTIVE takes minutes each)."""
    from kselect.kernels.triton.space import triton_space

    if n < 0 or n >= len(problems):
        return list(problems)
    return sorted(problems, key=lambda p: (len(triton_space(p, "exhaustive")), p.key))[:n]


def _geomean(xs) -> float:
    """Geometric mean of the positive, finite values (NaN when there are none)."""
    from scipy.stats import gmean

    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return float(gmean(xs)) if xs else float("nan")


def _phase_medians(rows: list) -> dict:
    """Median per GEMM of each decision phase (ms per decision): where the decision time goes."""
    names = sorted({n for r in rows for n in r.get("decision_phases_ms", {})})
    return {n: statistics.median(r["decision_phases_ms"].get(n, 0.0) / r["decisions"] for r in rows) for n in names}


_MEDIAN_FIELDS = ("kernel_ms", "compile_s", "benchmarked", "decision_ms", "decision_cpu_ms", "setup_ms")


def combine_repeats(rows: list[dict]) -> list[dict]:
    """One row per (variant, shape): a shape measured in several processes (--repeats, or
    pooled runs) gets the median of its numbers, every kernel time in `kernel_ms_samples`,
    the kernel chosen most often in `chosen` and each process's in `chosen_all`. Stock
    DEFAULT's pick varies between processes; the median is its typical result, not one draw.
    Errors and skips stand only where a shape has no measurement for the variant."""
    measured: dict = {}
    for r in rows:
        if "kernel_ms" in r:
            measured.setdefault((r["variant"], r["problem"]), []).append(r)
    out, seen = [], set()
    for r in rows:
        key = (r.get("variant"), r.get("problem"))
        if key in seen or ("kernel_ms" not in r and key in measured):
            continue
        seen.add(key)
        group = measured.get(key)
        if not group or len(group) == 1:
            out.append(r)
            continue
        row = dict(group[0])
        for f in _MEDIAN_FIELDS:
            vals = [g[f] for g in group if isinstance(g.get(f), (int, float))]
            if vals:
                row[f] = statistics.median(vals)
        names = {n for g in group for n in g.get("decision_phases_ms", {})}
        if names:
            row["decision_phases_ms"] = {
                n: statistics.median(g.get("decision_phases_ms", {}).get(n, 0.0) for g in group) for n in sorted(names)
            }
        picks = [g.get("chosen", "") for g in group]
        row.update(
            repeats=len(group),
            correct=all(g.get("correct") for g in group),
            kernel_ms_samples=[g["kernel_ms"] for g in group],
            chosen_all=picks,
            chosen=max(dict.fromkeys(picks), key=picks.count),
        )
        out.append(row)
    return out


def summarize(rows: list[dict]) -> dict:
    """Side-by-side ratios over the shapes every compared variant measured correctly (a shape
    measured in several processes counts once, at its medians: combine_repeats)."""
    by = {}
    for r in combine_repeats(rows):
        if "kernel_ms" in r and r.get("correct"):
            by.setdefault(r["variant"], {})[r["problem"]] = r
    plain = by.get("plain", {})

    def tuning(r):
        base = plain.get(r["problem"])
        return max(r["compile_s"] - base["compile_s"], 1e-3) if base else float("nan")

    def ratio(num, den, field):
        a, b = by.get(num, {}), by.get(den, {})
        common = sorted(set(a) & set(b))
        vals = [(tuning(a[p]) / tuning(b[p])) if field == "tuning" else a[p][field] / b[p][field] for p in common]
        return {"shapes": len(common), "geomean": _geomean(vals)}

    s: dict = {"variants": {}}
    for v, rs in by.items():
        rr = list(rs.values())
        s["variants"][v] = {
            "shapes": len(rr),
            "compile_s_median": statistics.median(r["compile_s"] for r in rr),
            "tuning_s_total": sum(tuning(r) for r in rr) if plain else float("nan"),
            "benchmarked_total": sum(r.get("benchmarked", 0) for r in rr),
            "fallbacks": sum(r.get("fallbacks", 0) for r in rr),
            "decision_ms_max": max(
                (r["decision_ms"] / r["decisions"] for r in rr if r.get("decisions")), default=float("nan")
            ),
            "decision_ms_median": statistics.median(
                [r["decision_ms"] / r["decisions"] for r in rr if r.get("decisions")] or [float("nan")]
            ),
            "decision_phases_ms_median": _phase_medians([r for r in rr if r.get("decisions")]),
            "setup_ms_median": statistics.median(
                [r.get("setup_ms", 0.0) for r in rr if r.get("decisions")] or [float("nan")]
            ),
            "setup_ms_max": max((r.get("setup_ms", 0.0) for r in rr if r.get("decisions")), default=float("nan")),
        }
    s["kernel_time_ratio"] = {
        f"{a}/{b}": ratio(a, b, "kernel_ms")
        for a, b in (
            ("kselect-verify", "exhaustive"),
            ("kselect-predict", "exhaustive"),
            ("default", "exhaustive"),
            ("kselect-verify", "default"),
            ("kselect-predict", "default"),
            ("plain", "default"),
        )
    }
    s["tuning_time_ratio"] = {
        f"{a}/{b}": ratio(a, b, "tuning")
        for a, b in (
            ("kselect-verify", "default"),
            ("kselect-verify", "exhaustive"),
            ("kselect-predict", "default"),
            ("default", "exhaustive"),
        )
    }
    kt, tt = s["kernel_time_ratio"], s["tuning_time_ratio"]
    s["targets"] = {
        "verify kernel within 1% of EXHAUSTIVE (geomean ratio <= 1.01)": _check(
            kt["kselect-verify/exhaustive"]["geomean"], lambda x: x <= 1.01
        ),
        "verify >= 1.05x faster than DEFAULT's picks (ratio <= 1/1.05)": _check(
            kt["kselect-verify/default"]["geomean"], lambda x: x <= 1 / 1.05
        ),
        "verify tuning <= 1/3 of DEFAULT's": _check(tt["kselect-verify/default"]["geomean"], lambda x: x <= 1 / 3),
        "verify tuning <= 1/20 of EXHAUSTIVE's": _check(
            tt["kselect-verify/exhaustive"]["geomean"], lambda x: x <= 1 / 20
        ),
        "predict decision <= 5 ms per GEMM": _check(
            s["variants"].get("kselect-predict", {}).get("decision_ms_max", float("nan")), lambda x: x <= 5.0
        ),
    }
    return s


def _check(value: float, ok) -> list:
    return [value, None if value != value else bool(ok(value))]


def write_report(out: Path, rows: list[dict], summary: dict, command: str, env: dict) -> None:
    """README.md (tables + targets) and summary.json beside results.jsonl."""
    (out / "summary.json").write_text(json.dumps({"summary": summary, "environment": env}, indent=2, default=str))
    variants = [v for v in VARIANTS if any(r.get("variant") == v for r in rows)]
    lines = [
        f"# GEMM tuning benchmark: stock max-autotune vs kselect ({env.get('device_name', '')})",
        "",
        "Command:",
        "```",
        command,
        "```",
        "",
        f"torch {env.get('torch')}, triton {env.get('triton')}, kselect code "
        f"{env.get('kselect_code') or 'not recorded'}; every variant in a fresh process with "
        "cold Inductor/Triton caches, which waits (untimed) for Inductor's compile-worker pool before "
        "its first shape (`compile_pool_s` in results.jsonl; runs before reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise's "
        "code did not); max-autotune variants with persistent-TMA templates on and no "
        "CUDA graphs in the compiled function. kernel = the compiled function's real runtime "
        "(CUDA-graph replay, cold rotating operands, median); tuning = compile time minus plain "
        "torch.compile's for the same shape. decision ms = kselect's time per GEMM from Inductor "
        "handing over its choices to the kept list (mapping them to candidates, cache key and "
        "lookup, ranking, policy); set-up ms = what came before a shape's decisions and is not in "
        "them: the ranker's one-time load (in the process's first shape unless the preflight loaded "
        "it) and its warm-up for the shape's graph (the size classes of its GEMMs).",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "| --- | --- | --- |",
    ]
    for name, (val, ok) in summary["targets"].items():
        lines.append(f"| {name} | {val:.4g} | {'yes' if ok else ('n/a' if ok is None else 'no')} |")
    lines += [
        "",
        "## Per variant",
        "",
        "| variant | shapes | median compile s | total tuning s | "
        "choices benchmarked | decision ms, median (max) | set-up ms per shape, median (max) | "
        "kselect fallbacks |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for v, d in summary["variants"].items():
        lines.append(
            f"| {v} | {d['shapes']} | {d['compile_s_median']:.2f} | {d['tuning_s_total']:.2f} | "
            f"{d['benchmarked_total']:g} | {d.get('decision_ms_median', float('nan')):.2f} "
            f"({d['decision_ms_max']:.2f}) | {d.get('setup_ms_median', float('nan')):.1f} "
            f"({d.get('setup_ms_max', float('nan')):.1f}) | {d['fallbacks']} |"
        )
    phased = {
        v: d["decision_phases_ms_median"] for v, d in summary["variants"].items() if d.get("decision_phases_ms_median")
    }
    if phased:
        names = sorted({n for ph in phased.values() for n in ph})
        lines += [
            "",
            "Decision phases, ms per decision (median over GEMMs; map = reading the GEMM and mapping "
            "or enumerating its candidates, key_cache = decision key and cache lookup, rank = "
            "featurize + trees, policy = choosing the kept set):",
            "",
            "| variant | " + " | ".join(names) + " |",
            "|---" * (len(names) + 1) + "|",
        ]
        lines += [
            f"| {v} | " + " | ".join(f"{ph.get(n, float('nan')):.2f}" for n in names) + " |" for v, ph in phased.items()
        ]
    lines += [
        "",
        "Geomean ratios over the shapes both variants measured (kernel time; tuning time):",
        "",
        "| ratio | shapes | geomean |",
        "| --- | --- | --- |",
    ]
    for kind in ("kernel_time_ratio", "tuning_time_ratio"):
        for name, d in summary[kind].items():
            lines.append(f"| {kind.split('_')[0]} {name} | {d['shapes']} | {d['geomean']:.4f} |")
    lines += [
        "",
        "## Per shape (kernel ms / compile s / benchmarked)",
        "",
        "| shape | " + " | ".join(variants) + " |",
        "|---" * (len(variants) + 1) + "|",
    ]
    cell = {}
    for r in combine_repeats(rows):
        if "kernel_ms" in r:
            c = f"{r['kernel_ms']:.4f} / {r['compile_s']:.1f} / {r.get('benchmarked', 0):g}"
            c += f" (median of {r['repeats']})" if r.get("repeats", 1) > 1 else ""
            cell[(r["problem"], r["variant"])] = c if r.get("correct") else c + " WRONG"
        else:
            cell[(r["problem"], r["variant"])] = "error" if "error" in r else "skipped"
    for p in dict.fromkeys(r["problem"] for r in rows):
        lines.append(f"| {p} | " + " | ".join(cell.get((p, v), "") for v in variants) + " |")
    lines += ["", "Chosen kernels per shape and variant, errors and every number: `results.jsonl`."]
    (out / "README.md").write_text("\n".join(lines) + "\n")


def _environment(device: str) -> dict:
    import torch

    from kselect.training.measure.provenance import code_digest

    env = {"torch": torch.__version__, "device": device, "kselect_code": code_digest()}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device == "cuda":
        env["device_name"] = torch.cuda.get_device_name(0)
    return env


def bench_gemm(
    problems,
    variants: list[str],
    out: Path,
    *,
    device: str = "cuda",
    model: str = "",
    exhaustive_shapes: int = 3,
    max_minutes: float = 0.0,
    repeats: int = 1,
    policy: dict | None = None,
    command: str = "",
    say=print,
    progress=None,
) -> dict:
    """Every variant over `problems` (stock EXHAUSTIVE over the `exhaustive_shapes` with the
    smallest space), each in its own cold process, `repeats` interleaved rounds; writes
    results.jsonl, summary.json and README.md into `out` and returns the summary. `policy`:
    kselect's run settings (training/bench/common.py policy_settings). `say` hears a line per
    variant process; `progress` ("bench gemm processes", done, total) after each."""
    variants = parse_variants(",".join(variants))
    if not problems:
        raise BenchError("no shapes selected (check --shapes-file / --workload)")
    if device not in ("cuda", "cpu"):
        raise BenchError(f"--device must be cuda or cpu, got {device!r}")
    if repeats < 1:
        raise BenchError(f"--repeats must be >= 1, got {repeats}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise BenchError(
                "no CUDA device visible: `kselect bench gemm` times real kernels "
                "(use --device cpu to exercise the pipeline on a CPU)"
            )
    if device == "cuda" and any(VARIANTS[v][1] for v in variants):
        try:
            ranker_ident(torch.device("cuda"), model)
        except Exception as exc:  # noqa: BLE001 -- RankerUnavailable, ModelError, ImportError...
            raise BenchError(
                f"kselect cannot rank on this GPU ({type(exc).__name__}: {exc}); its variants "
                "would fall back to stock and the comparison would be meaningless"
            ) from None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    results.unlink(missing_ok=True)
    deadline = time.time() + 60 * max_minutes if max_minutes else 0.0
    subset = exhaustive_subset(problems, exhaustive_shapes)
    # interleaved rounds, every other one reversed; stock EXHAUSTIVE stays last in each round,
    # so a time budget cuts it, not kselect
    order = list(alternating_rounds(variants, repeats, last=("exhaustive",)))
    for done, (repeat, v) in enumerate(order, 1):
        if progress:
            progress("bench gemm processes", done - 1, len(order))
        shapes = subset if v == "exhaustive" else problems
        left = deadline - time.time() if deadline else None
        if left is not None and left <= 0:
            with open(results, "a") as fh:
                for p in shapes:
                    fh.write(
                        json.dumps({"variant": v, "problem": p.key, "repeat": repeat, "skipped": "time budget spent"})
                        + "\n"
                    )
            continue
        say(f"== {v}: {len(shapes)} shapes" + (f" (round {repeat + 1} of {repeats})" if repeats > 1 else ""))
        plan = {
            "variant": v,
            "repeat": repeat,
            "device": device,
            "model": model,
            **(policy or {}),
            "out": str(results.resolve()),
            "deadline": deadline,
            "problems": [p.to_dict() for p in shapes],
        }
        why = _spawn(plan, timeout=left + 30 if left is not None else None)
        if why:
            say(f"   {v}: {why}")
            with open(results, "a") as fh:
                fh.write(json.dumps({"variant": v, "problem": "*", "repeat": repeat, "error": why}) + "\n")
    if progress:
        progress("bench gemm processes", len(order), len(order))
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    summary = summarize(rows)
    write_report(out, rows, summary, command, _environment(device))
    return summary


if __name__ == "__main__":  # worker: python -m kselect.training.bench.gemm PLAN.json
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run_worker(json.loads(Path(sys.argv[1]).read_text())))
