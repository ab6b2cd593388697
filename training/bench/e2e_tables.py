"""The end-to-end report's tables, each a list of Markdown lines from the runs' rows: step and
compile times with the targets' verdicts, compile phases, the kernel each variant used per
GEMM, kernel time by kind, and verify's own measurements and the decisions behind them.
e2e_report.py puts them in the README; e2e_pooled.py and the report scripts reuse them."""

from __future__ import annotations

from kselect.training.bench.e2e_spec import ORDER
from kselect.training.bench.kernel_time import KINDS
from kselect.training.bench.kernel_time import differences as kernel_differences


def gemm_kernel_ms(r: dict) -> float | None:
    """A run's GEMM kernel time per step from its profile (kernel_time), else None."""
    return ((r.get("kernel_time") or {}).get("ms_per_step") or {}).get("gemm")


PROFILES = {  # run key -> what its profile ran, for the table's title
    "kernel_time": "steps after the timing",
    "graph_kernel_time": "CUDA-graph replays after the GPU-only timing",
}


def kernel_time_table(runs: list[dict], workload: str, key: str = "kernel_time") -> list[str]:
    """Per variant, the step's kernel time by kind (medians over repeats): the GEMM column is
    what GEMM selection controls; whole-step gaps between same-kernel runs are noise. For the
    graph replays' profile (`key="graph_kernel_time"`) a last column gives the replay time
    not spent in kernels: with the same kernels, a slower replay puts its excess there."""
    failed = [
        f"{r['variant']}: {r[key]['error']}"
        for r in runs
        if r["workload"] == workload and (r.get(key) or {}).get("error")
    ]
    notes = [f"(kernel profile failed -- {'; '.join(failed)})", ""] if failed else []
    rows = sorted(
        (r for r in runs if r["workload"] == workload and (r.get(key) or {}).get("ms_per_step")),
        key=lambda r: ORDER.index(r["variant"]),
    )
    if not rows:
        return notes
    graph = key == "graph_kernel_time"
    k = rows[0][key]
    lines = [
        f"Kernel time per step by kind, ms ({k['source']}, {k['steps']} {PROFILES[key]}; medians over repeats):",
        "",
        "| variant | " + " | ".join(KINDS) + " | total |" + (" replay minus kernels |" if graph else ""),
        "| --- |" + " --- |" * (len(KINDS) + 1 + graph),
    ]
    for r in rows:
        ms = r[key]["ms_per_step"]
        idle = [fmt(graph_gap_ms(r), ".3f")] if graph else []
        lines.append(
            f"| {r['variant']} | " + " | ".join([fmt(ms.get(c), ".3f") for c in (*KINDS, "total")] + idle) + " |"
        )
    lines.append("")
    default = next((r for r in rows if r["variant"] == "default"), None)
    for r in rows:
        if default is None or not r["variant"].startswith("kselect-verify"):
            continue
        diff = kernel_differences(r[key], default[key])
        if diff:
            lines += [
                f"Kernels whose time differs most, {r['variant']} vs default (ms per step; the first process of each):",
                "",
                f"| kind | kernel | {r['variant']} | default |",
                "| --- | --- | --- | --- |",
            ]
            lines += [f"| {kind} | `{name[:90]}` | {mine:.4f} | {theirs:.4f} |" for kind, name, mine, theirs in diff]
            lines.append("")
    return lines + notes


def graph_gap_ms(r: dict) -> float | None:
    """GPU-only step minus the kernel time of the profiled replays: the replay's time between
    (not in) kernels; the median over processes of each one's difference when combined."""
    if r.get("graph_gap_ms") is not None:
        return r["graph_gap_ms"]
    total = ((r.get("graph_kernel_time") or {}).get("ms_per_step") or {}).get("total")
    return None if total is None or r.get("graph_step_ms") is None else r["graph_step_ms"] - total


def kernel_picks(r: dict) -> dict:
    """{GEMM problem key: the kernel this run used}: kselect's final pick, or for stock
    max-autotune the choice Inductor timed fastest; {} for plain (ATen throughout, not tuned)."""
    picks = {p: kept[0] for p, kept in ((r.get("kselect") or {}).get("picks") or {}).items() if len(kept) == 1}
    return picks or dict((r.get("gemms") or {}).get("winners") or {})


def same_kernels(r: dict, default: dict) -> tuple[int, int] | None:
    """(GEMMs where `r` used DEFAULT's kernel, GEMMs both report), or None when either has none:
    a step-time gap between runs of the same kernels is noise, not selection."""
    mine, theirs = kernel_picks(r), kernel_picks(default)
    both = [p for p in mine if p in theirs]
    return (sum(mine[p] == theirs[p] for p in both), len(both)) if both else None


def kernels_table(runs: list[dict], workload: str) -> list[str]:
    """Per GEMM, the kernel each autotuned variant used (the first process's, with repeats)."""
    rows = [r for r in runs if r["workload"] == workload and r.get("status") == "ok"]
    picks = {r["variant"]: kernel_picks(r) for r in sorted(rows, key=lambda r: ORDER.index(r["variant"]))}
    picks = {v: p for v, p in picks.items() if p}
    problems = list(dict.fromkeys(k for p in picks.values() for k in p))
    if not problems:
        return []
    lines = [
        f"Kernels per GEMM ({workload}; stock variants: the choice Inductor timed fastest; plain: ATen throughout):",
        "",
        "| GEMM | " + " | ".join(picks) + " |",
        "| --- |" + " --- |" * len(picks),
    ]
    for prob in problems:
        lines.append(f"| {prob} | " + " | ".join(f"`{p[prob]}`" if prob in p else "-" for p in picks.values()) + " |")
    return lines + [""]


def fmt(x, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


def table(runs: list[dict], workload: str) -> list[str]:
    rows = [r for r in runs if r["workload"] == workload]
    ok = {r["variant"]: r for r in rows if r.get("status") == "ok"}
    base_model = (ok.get("plain") or rows[0])["model"]
    lines = [
        "| variant | model | compile s | x plain compile | step ms (p10-p90) | x default step | "
        "GPU-only step ms (CUDA-graph replay) | tokens/s | GEMMs benchmarked (+cache hits) | "
        "candidates benchmarked | GEMM tuning s | vs eager | status |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(rows, key=lambda r: ORDER.index(r["variant"])):
        same = r["model"] == base_model
        plain, default = ok.get("plain"), ok.get("default")
        xc = r["compile_s"] / plain["compile_s"] if same and plain and r.get("compile_s") else None
        xs = r["step_ms"] / default["step_ms"] if same and default and r.get("step_ms") else None
        step = (
            f"{r['step_ms']:.3f} ({r['step_ms_p10']:.3f}-{r['step_ms_p90']:.3f})"
            if r.get("step_ms") is not None
            else "-"
        )
        g = r.get("gemms") or {}
        c = r.get("correctness") or {}
        check = "-" if not c else f"{'ok' if c['ok'] else 'WRONG'} {c['rel_err']:.1e}" + anchor_note(c)
        tuned = f"{g['benchmarked']} (+{g['cache_hits']})" if g else "-"
        tuning = fmt((r.get("gemm_tuning") or {}).get("total_s"), ".1f")
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {str(r.get('error', ''))[:120]}"
        gpu_only = fmt(r.get("graph_step_ms"), ".3f", "-" if not r.get("graph_error") else "capture failed")
        lines.append(
            f"| {r['variant']} | {r['model']} | {fmt(r.get('compile_s'), '.1f')} | {fmt(xc, '.2f')} | "
            f"{step} | {fmt(xs, '.3f')} | {gpu_only} | {fmt(r.get('tokens_per_s'), ',.0f')} | "
            f"{tuned} | {g.get('candidates', '-')} | {tuning} | "
            f"{check} | {status.replace('|', '/')} |"
        )
    return lines


def phase_table(runs: list[dict], workload: str, min_s: float = 0.1) -> list[str]:
    """Inductor's compile phases (seconds; medians over repeats) per variant: the phases taking
    >= min_s in some variant, largest first. Phases nest, so columns do not sum to compile s."""
    rows = sorted(
        (r for r in runs if r["workload"] == workload and r.get("compile_phases")),
        key=lambda r: ORDER.index(r["variant"]),
    )
    if not rows:
        return []
    names = [
        k
        for k in dict.fromkeys(k for r in rows for k in r["compile_phases"])
        if max(r["compile_phases"].get(k, 0.0) for r in rows) >= min_s
    ]
    names.sort(key=lambda k: -max(r["compile_phases"].get(k, 0.0) for r in rows))
    head = " | ".join(r["variant"] for r in rows)
    lines = [
        f"Compile phases, s (Inductor's `compilation_time_metrics`; nested, so they do not sum; "
        f">= {min_s:g} s somewhere):",
        "",
        f"| phase | {head} |",
        "| --- |" + " --- |" * len(rows),
    ]
    for label, key in (("*compile, wall*", "compile_s"), ("*compile, this process's CPU*", "compile_cpu_s")):
        if any(r.get(key) is not None for r in rows):  # the whole the phases are parts of
            lines.append(f"| {label} | " + " | ".join(fmt(r.get(key), ".2f") for r in rows) + " |")
    for k in names:
        lines.append(f"| {k} | " + " | ".join(fmt(r["compile_phases"].get(k), ".2f") for r in rows) + " |")
    return lines + [""]


def measurement_table(runs: list[dict]) -> list[str]:
    """Verify's own measurements, one row per measured GEMM of each process: where its wall time
    went, and how its templates' compiles shared the wait (threads side by side: their CPU adds
    up to more than the span; queued on the GIL: each one's wall near the span, its CPU well
    under it). [] where nothing was measured."""
    rows = [(r, m) for r in runs for m in (r.get("kselect") or {}).get("measurements") or []]
    if not rows:
        return []
    lines = [
        "Verify's measurements (ms; compiles: where the templates compiled, their span from the first "
        "start to the last end, their threads' CPU summed, the longest one's wall, the longest compile "
        "the compile-cost model predicted (dev-CPU ms), the longest wait for a compile worker, and the "
        "CPU of child processes such as ptxas that ended meanwhile):",
        "",
        "| workload | variant | round | GEMM | candidates | wall | compile wait | timing | compiles: in "
        "| span | threads' CPU | longest | longest predicted | longest in a worker | children's CPU | winner |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r, m in rows:
        ph, c = m.get("phases_ms") or {}, m.get("compiles") or {}
        each = list((c.get("per_choice") or {}).values())
        cpu = sum(t["cpu_ms"] for t in each) if each else None
        longest = max((t["wall_ms"] for t in each), default=None)
        in_worker = max((t["worker_ms"] for t in each if "worker_ms" in t), default=None)
        predicted = max((m.get("predicted_compile_ms") or {}).values(), default=None)
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r.get('repeat', 0)} | {m['problem']} | {len(m['ms'])} | "
            f"{fmt(m.get('wall_ms'), '.0f')} | {fmt(ph.get('compile_wait'), '.0f')} | "
            f"{fmt(ph.get('timing'), '.0f')} | {m.get('compiled_in') or '-'} | "
            f"{fmt(c.get('span_ms'), '.0f')} | {fmt(cpu, '.0f')} | {fmt(longest, '.0f')} | "
            f"{fmt(predicted, '.0f')} | {fmt(in_worker, '.0f')} | {fmt(c.get('children_cpu_ms'), '.0f')} | `{m['winner']}` |"
        )
    return lines + [""]


def measured_decision_table(runs: list[dict]) -> list[str]:
    """Why verify kept the set it measured, per measured GEMM of each process: the decisions on
    that GEMM (a stage each), how many candidates each saw and kept, and its reason -- where the
    compile price passed a slow template over, the reason names it. [] where nothing was
    measured, or the runs predate the recorded decisions."""
    rows = []
    for r in runs:
        ks = r.get("kselect") or {}
        measured = {m["problem"] for m in ks.get("measurements") or []}
        rows += [(r, d) for d in ks.get("decisions") or [] if d.get("problem") in measured]
    if not rows:
        return []
    lines = [
        "Verify's decisions on the GEMMs it measured (candidates seen, kept, and why):",
        "",
        "| workload | variant | round | GEMM | stage | seen | kept | why |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r, d in rows:
        why = str(d.get("why") or "-").replace("|", "/")
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r.get('repeat', 0)} | {d['problem']} | "
            f"{d.get('stage', '-')} | {d.get('seen', '-')} | {len(d.get('kept') or [])} | {why} |"
        )
    return lines + [""]


def anchor_note(c: dict) -> str:
    """How a result beyond the tolerance vs eager was judged (the fp32 anchor), else ''."""
    if "rel_err_vs_fp32" not in c or c["rel_err"] <= c["tol"]:
        return ""
    return (
        f" (vs fp32 {c['rel_err_vs_fp32']:.1e}, eager's {c['eager_rel_err_vs_fp32']:.1e}, bound {c['fp32_bound']:.1e})"
    )
