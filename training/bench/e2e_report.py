"""The end-to-end bench's report: processes of one variant combined (medians, every sample),
the issue's targets judged, and README.md (tables of compile and step time, compile phases,
the kernel each variant used per GEMM, kernel time by kind) plus the compile-vs-step plot,
written after every run so an interrupted bench keeps what it measured."""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

from kselect.selector.decide.policy import ATEN_MARGIN_SD
from kselect.selector.model.compile_price import COMPILE_BUDGET
from kselect.training.bench.common import run_settings
from kselect.training.bench.e2e_spec import (
    ORDER,
    PREDICT_COMPILE_VS_PLAIN,
    REF_MULTIPLIER,
    VARIANTS,
    VERIFY_COMPILE_VS_PLAIN,
    write_json,
)
from kselect.training.bench.e2e_tables import (
    PROFILES,
    fmt,
    gemm_kernel_ms,
    graph_gap_ms,
    kernel_time_table,
    kernels_table,
    measured_decision_table,
    measurement_table,
    phase_table,
    same_kernels,
    table,
)
from kselect.training.bench.kernel_time import combine as combine_kernel_time

log = logging.getLogger(__name__)


def targets(runs: list[dict]) -> list[dict]:
    """The issue's targets per workload, against plain and DEFAULT runs of the same model."""
    ok = {(r["workload"], r["variant"]): r for r in runs if r.get("status") == "ok"}
    out = []
    for w in dict.fromkeys(r["workload"] for r in runs):
        plain, default = ok.get((w, "plain")), ok.get((w, "default"))
        verify_text = f"step <= default's and compile <= {VERIFY_COMPILE_VS_PLAIN}x plain's"
        # every verify variant (the experiments too) is judged by verify's target
        judged = [(v, verify_text) for v in ORDER if VARIANTS[v].kselect == "verify"]
        for variant, text in judged + [("kselect-predict", f"compile <= {PREDICT_COMPILE_VS_PLAIN}x plain's")]:
            if not any(r["workload"] == w and r["variant"] == variant for r in runs):
                continue
            r = ok.get((w, variant))
            met, why = None, "not measured"
            if r:
                met, why = _judge(r, variant, plain, default)
            out.append({"workload": w, "variant": variant, "target": text, "met": met, "detail": why})
    return out


def _judge(r: dict, variant: str, plain: dict | None, default: dict | None) -> tuple[bool | None, str]:
    """(met, detail) of one kselect run: each half of a target it has a baseline run for is
    measured and said; `met` is None unless every half could be judged."""
    verify = variant.startswith("kselect-verify")
    load = r.get("kselect_load_s") or 0.0  # a process's first compile also loads the cost model
    head, tail = [], []
    step = compile_x = None
    if verify and default:
        step = r["step_ms"] / default["step_ms"]
        head.append(f"step {step:.3f}x default")
        same = same_kernels(r, default)
        if same:
            tail.append(f"DEFAULT's kernel on {same[0]} of {same[1]} GEMMs")
        gemm_ms = gemm_kernel_ms(r), gemm_kernel_ms(default)
        if None not in gemm_ms and gemm_ms[1] > 0:
            tail.append(
                f"GEMM kernels {gemm_ms[0] / gemm_ms[1]:.3f}x DEFAULT's "
                f"({gemm_ms[0]:.3f} vs {gemm_ms[1]:.3f} ms per step)"
            )
    if plain:
        compile_x = (r["compile_s"] + load) / plain["compile_s"]
        head.append(f"compile {compile_x:.2f}x plain" + (f" (its {load:.2f} s model load included)" if load else ""))
        if r.get("compile_cpu_s") and plain.get("compile_cpu_s"):
            tail.append(
                f"host CPU {(r['compile_cpu_s'] + load) / plain['compile_cpu_s']:.2f}x plain's "
                f"({r['compile_cpu_s'] + load:.2f} vs {plain['compile_cpu_s']:.2f} s)"
            )
    missing = [
        name for name, run, needed in (("default", default, verify), ("plain", plain, True)) if needed and not run
    ]
    if missing:
        tail.append(f"not judged: no {' or '.join(missing)} run in this bench")
    if verify:
        met = None if None in (step, compile_x) else step <= 1.0 and compile_x <= VERIFY_COMPILE_VS_PLAIN
    else:
        met = None if compile_x is None else compile_x <= PREDICT_COMPILE_VS_PLAIN
    if r["correctness"]["ok"] is False:
        met, tail = False, tail + ["result WRONG"]
    return met, "; ".join(([", ".join(head)] if head else []) + tail)


def render(report: dict) -> str:
    s, env, runs = report["settings"], report.get("env", {}), report.get("combined") or report["runs"]
    device = (env.get("gpu_name") or "cuda") if s["device"] == "cuda" else f"CPU ({env.get('cpus', '?')} cores)"
    lines = [
        f"# End-to-end: Llama-style decoder under each compile variant ({device})",
        "",
        f"Command: `{report.get('command')}`",
        "",
        f"Started {report.get('started_at')}, {report.get('elapsed_s', 0) / 60:.1f} min; torch "
        f"{env.get('torch_version', '?')}, triton {env.get('triton_version', '?')}, CUDA "
        f"{env.get('cuda_version', '-')}, {env.get('cpus', '?')} CPU cores.",
        "",
        "## Setup",
        "",
        f"- model `{s['model']}` ({_model_note(s['model'], report.get('runs', []))}), {s['dtype']}, random weights (seed {s['seed']})",
        "- variants: " + "; ".join(f"`{v}` = {VARIANTS[v].help}" for v in ORDER if v in s["variants"]),
        f"- train: batch {s['batch']} x seq {s['seq']}; prefill: batch {s['batch']} x prompt {s['seq']} "
        f"(M = {s['batch'] * s['seq']}); decode: batch {s['batch']} (M = {s['batch']}), one token after "
        f"a {s['seq']}-token static KV cache",
        f"- steady state: median of {s['steps']} synchronised steps after {s['warmup']} warm-up steps"
        + (f" and at least {s['warmup_s']:g} s of them" if s.get("warmup_s") else "")
        + ("" if s["steps"] >= 20 else " (**fewer than the 20 the issue asks for: a smoke run**)")
        + (
            f"; each variant in {s['repeats']} processes (interleaved rounds, every other one in "
            f"reverse order): step and compile are the medians over them, the step range in brackets is min-max of the per-process medians, "
            f"every sample in results.json (`combined[].step_ms_samples`)"
            if s.get("repeats", 1) > 1
            else ""
        ),
        "- compile s: wall time of the first call (compile + one step), synchronised; the eager "
        "first call is in results.json (`eager_first_s`); kselect's one-time cost-model load is "
        "not in it (below, `ranker load s`) but the Targets table adds it to the kselect variants' compile"
        + (
            "; every variant first waits for Inductor's compile-worker pool to be up, untimed "
            "(`compile_pool_s` in results.json): otherwise the pool's start races the compile, "
            "which then compiles kernels in-process until the workers are up, a between-process "
            "noise of up to +-30 % of a compile"
            if s.get("warm_pool", True)
            else "; `--cold-pool`: the compile-worker pool starts with the compile, as in a script's "
            "first torch.compile"
        ),
        "- cold caches: every (variant, workload) in a fresh process with new, empty "
        "TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR (Inductor's caches on, as in a user's first "
        "compile: a GEMM shape repeated in another layer is tuned once)",
        (
            "- max-autotune variants = `torch.compile` with Inductor's `max_autotune_gemm` (GEMM "
            "autotuning only, `--autotune gemm`): compile-time differences are GEMM selection alone. "
            "The full mode also tunes every pointwise/reduction kernel (coordinate descent; on the "
            "H200 train step ~+70-115 s of compile in every max-autotune variant, kselect ones too, "
            "reports/2026-12-02-e2e-h200/attempt-1)"
            if s.get("autotune", "gemm") == "gemm"
            else "- max-autotune variants = mode `max-autotune-no-cudagraphs` (`--autotune full`): they also "
            "tune every pointwise/reduction kernel (coordinate descent), kselect ones included"
        ),
        "- no CUDA graphs in any variant (plain torch.compile uses none): like for like; prefill/decode "
        "also report the step's GPU time alone (the compiled step captured in a CUDA graph by the "
        "benchmark, median of 20 replays): step minus that is host launch overhead",
        *(
            [
                f"- kernel time by kind: {s['profile_steps']} more steps under torch.profiler after the "
                "timing, each kernel's GPU time summed by kind (GEMM, attention, Inductor's generated "
                "kernels, memory, other); the GEMM column is the part GEMM selection controls, and "
                "identical kernels differ by ~1-2 % between processes (training/bench/kernel_time.py); "
                "prefill/decode profile as many CUDA-graph replays too (the kernels as the graph runs "
                "them, and the replay time outside them)"
            ]
            if s.get("profile_steps")
            else []
        ),
        "- train step: compiled forward + cross-entropy (+ its compiled backward), eager AdamW "
        "(fused on CUDA), all timed; correctness = step-1 loss and gradients vs eager",
        f"- kselect: `kselect.selector.enable(mode, k={s['k']}"
        f"{', adaptive_k=False' if run_settings(s).get('adaptive_k') is False else ''}"
        f"{policy_note(s)})` on top of max-autotune, search space "
        f"{s['kselect_space']} (kselect prunes Inductor's choices before code generation, so ranking "
        f"the whole space costs milliseconds), cost model "
        f"{s['kselect_model'] or 'shipped for this GPU'}, decision cache in the run's fresh temp dir",
        "- GEMMs benchmarked / candidates: Inductor's feedback saver (a GEMM whose choices come from the "
        "autotune cache, e.g. a repeated layer, is a cache hit); GEMM tuning s: benchmarking + "
        "precompiling seconds Inductor logs for those GEMMs (part of compile s)",
        *(
            [
                "- **every compile ran under cProfile** (`--profile-compile`): compile s and its phases "
                "are inflated; the profiles are `logs/<workload>-<variant>.prof` (+ `.prof.txt`)"
            ]
            if s.get("profile_compile")
            else []
        ),
        f"- tolerance vs eager: relative-norm error <= {s['rtol']:g}; bf16/fp16 results "
        f"beyond it still pass when no further from an fp32 run of the same weights than "
        f"{REF_MULTIPLIER:g}x eager's own error + tol/10 (PyTorch's accuracy rule for half "
        f"dtypes: rounding alone makes a deep graph drift from eager)"
        + (", freezing on for prefill/decode" if s["freezing"] else ""),
        "",
    ]
    if "exhaustive" in s["variants"] and s["exhaustive_model"] != s["model"]:
        lines += [
            f"**EXHAUSTIVE runs use the smaller model `{s['exhaustive_model']}` "
            f"({_model_note(s['exhaustive_model'])}) on {', '.join(s['exhaustive_workloads'])}**: "
            "their ratios to plain/default are left out.",
            "",
        ]
    for w in dict.fromkeys(r["workload"] for r in runs):
        lines += (
            [f"## {w}", ""]
            + table(runs, w)
            + [""]
            + phase_table(runs, w)
            + kernels_table(runs, w)
            + kernel_time_table(runs, w)
            + kernel_time_table(runs, w, key="graph_kernel_time")
        )
    tg = targets(runs)
    if tg:
        lines += [
            "## Targets",
            "",
            "| workload | variant | target | met | measured |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {t['workload']} | {t['variant']} | {t['target']} | "
            f"{ {True: 'met', False: 'NOT met', None: 'n/a'}[t['met']] } | {t['detail']} |"
            for t in tg
        ]
        lines.append("")
    ks = [r for r in report["runs"] if r.get("kselect")]
    if ks:
        lines += [
            "## kselect decisions",
            "",
            "Ranker: " + "; ".join(sorted({str(r.get("kselect_ranker")) for r in ks})),
            "",
            "| workload | variant | ranker load s | decisions (per thread) | candidates ranked | kept | "
            "ranking ms (CPU ms) | final picks | left to stock | fallbacks | warnings |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in ks:
            k = r["kselect"]
            st = k.get("stats", {})
            threads = ", ".join(f"{t}: {n}" for t, n in k.get("threads", {}).items())
            lines.append(
                f"| {r['workload']} | {r['variant']} | {fmt(r.get('kselect_load_s'), '.2f')} | "
                f"{st.get('decisions', k['decisions_logged'])}"
                f"{f' ({threads})' if threads else ''} | {k['candidates_ranked']} | {k['kept']} | "
                f"{k['ranking_ms']} ({fmt(k.get('decision_cpu_ms'), '.1f')}) | "
                f"{', '.join(f'{t} {n}' for t, n in sorted(k.get('picks_by_template', {}).items())) or '-'}"
                f" | {', '.join(k.get('stock_ops', [])) or '-'}"  # the ops kselect's gate left to stock
                f" | {st.get('fallbacks', '-')} | "
                f"{'; '.join(k['warnings'])[:300].replace('|', '/') or '-'} |"
            )
        lines.append("")
        lines += measurement_table(ks)
        lines += measured_decision_table(ks)
    lines += ["![compile time vs step time](compile_vs_step.png)", ""]
    if report.get("plot_error"):
        lines += [f"(plot failed: {report['plot_error']})", ""]
    lines += [
        "Per-run logs: `logs/<workload>-<variant>.log` next to this file; every number above is in results.json.",
        "",
    ]
    return "\n".join(lines)


def _model_note(name: str, runs: list | None = None) -> str:
    """The Llama preset's note and size; a real model's as its runs recorded them."""
    from kselect.training.bench.llama import preset

    try:
        cfg = preset(name)
        note, params = cfg.note, cfg.n_params()
    except ValueError:
        recorded = [r for r in runs or () if r.get("model") == name and r.get("params")]
        if not recorded:
            return "?"
        note, params = recorded[0].get("model_note", ""), recorded[0]["params"]
    return f"{note}; {params / 1e9:.2f} B parameters" if params > 1e8 else f"{note}; {params:,} parameters"


def plot(runs: list[dict], path: Path) -> None:
    """One panel per workload: compile time (x) against step time (y), one marker per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r["workload"] for r in runs))
    shapes = "osDPv^<>phX*d"  # one per variant in ORDER (an unknown one gets a circle)
    markers = {v: shapes[i % len(shapes)] for i, v in enumerate(ORDER)}
    fig, axes = plt.subplots(1, max(len(workloads), 1), figsize=(5 * max(len(workloads), 1), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        pts = [r for r in runs if r["workload"] == w and r.get("compile_s") is not None and r.get("step_ms")]
        for r in pts:
            ax.scatter(
                r["compile_s"],
                r["step_ms"],
                marker=markers.get(r["variant"], "o"),
                s=60,
                label=r["variant"] + ("" if r["status"] == "ok" else f" ({r['status']})"),
            )
            ax.annotate(
                r["variant"], (r["compile_s"], r["step_ms"]), fontsize=7, xytext=(4, 4), textcoords="offset points"
            )
        xs = [r["compile_s"] for r in pts]
        if xs and max(xs) > 10 * min(xs):
            ax.set_xscale("log")
        ax.set_title(f"{w} ({pts[0]['model'] if pts else 'no data'})")
        ax.set_xlabel("compile wall time, s (first call)")
        ax.set_ylabel("step time, ms (median)")
        ax.grid(alpha=0.3)
        if pts:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def safely(fn, *args):
    """fn(*args), or a note of its failure: reporting must never end a bench that measured."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001
        log.warning("%s failed", getattr(fn, "__name__", fn), exc_info=True)
        return f"({getattr(fn, '__name__', 'report')} failed: {type(exc).__name__}: {exc})"


def combine_repeats(runs: list[dict]) -> list[dict]:
    """One row per (workload, variant, model): with several processes per variant, the median
    step and compile time over the ok ones, their range in step_ms_p10 / _p90 (min / max of the
    per-process medians) and every sample in *_samples. A single run passes through."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["workload"], r["variant"], r["model"]), []).append(r)
    out = []
    for rs in groups.values():
        ok = [r for r in rs if r.get("status") == "ok"]
        if len(rs) == 1 or not ok:
            out.append(rs[0])
            continue
        steps = [r["step_ms"] for r in ok]
        compiles = [r["compile_s"] for r in ok]
        row = dict(ok[0])
        row.update(
            {
                "repeats": len(ok),
                "step_ms": statistics.median(steps),
                "step_ms_p10": min(steps),
                "step_ms_p90": max(steps),
                "compile_s": statistics.median(compiles),
                "step_ms_samples": steps,
                "compile_s_samples": compiles,
                "tokens_per_s": statistics.median(r["tokens_per_s"] for r in ok),
                # the worst process's verdict and numbers (its fp32 anchor, if any, with them)
                "correctness": {
                    **max((r["correctness"] for r in ok), key=lambda c: c["rel_err"]),
                    "ok": all(r["correctness"]["ok"] for r in ok),
                },
            }
        )
        phases = [r["compile_phases"] for r in ok if r.get("compile_phases")]
        if phases:
            row["compile_phases"] = {
                k: statistics.median(p.get(k, 0.0) for p in phases) for k in dict.fromkeys(k for p in phases for k in p)
            }
        cpus = [r["compile_cpu_s"] for r in ok if r.get("compile_cpu_s") is not None]
        if cpus:
            row["compile_cpu_s"], row["compile_cpu_s_samples"] = statistics.median(cpus), cpus
        loads = [r["kselect_load_s"] for r in ok if r.get("kselect_load_s") is not None]
        if loads:
            row["kselect_load_s"] = statistics.median(loads)
        graphs = [r["graph_step_ms"] for r in ok if r.get("graph_step_ms") is not None]
        if graphs:
            row["graph_step_ms"], row["graph_step_ms_samples"] = statistics.median(graphs), graphs
        for key in PROFILES:
            kernels = combine_kernel_time([r.get(key) for r in ok])
            if kernels:
                row[key] = kernels
        gaps = [g for g in map(graph_gap_ms, ok) if g is not None]
        if gaps:
            row["graph_gap_ms"], row["graph_gap_ms_samples"] = statistics.median(gaps), gaps
        if len(ok) < len(rs):
            row["error"] = f"{len(rs) - len(ok)} of {len(rs)} processes not ok"
        out.append(row)
    return out


def write_report(report: dict, out: Path) -> None:
    """results.json first (the numbers), then the plot and README.md; their failures are noted."""
    combined = safely(combine_repeats, report["runs"])
    report["combined"] = combined if isinstance(combined, list) else report["runs"]
    report["targets"] = safely(targets, report["combined"])
    write_json(out / "results.json", report)
    err = safely(plot, report["combined"], out / "compile_vs_step.png")
    if err:
        report["plot_error"] = err
    else:
        report.pop("plot_error", None)
    text = safely(render, report)
    if text.startswith("(render failed"):
        text = f"# kselect bench e2e\n\n{text}; every number is in results.json\n"
    (out / "README.md").write_text(text)
    write_json(out / "results.json", report)


def policy_note(settings: dict) -> str:
    """ ", min_k=N" / ", aten_margin=X" / ", compile_budget=X" / ", late decision" / ", cold start"
    when the run set them away from the defaults (a run from before compile_budget existed did
    not price compiles; one from before the warm start existed says nothing of it)."""
    n, m = settings.get("min_k", 1), settings.get("aten_margin", ATEN_MARGIN_SD)
    b = settings.get("compile_budget")
    return (
        (f", min_k={n}" if n != 1 else "")
        + (f", aten_margin={m:g}" if m != ATEN_MARGIN_SD else "")
        + (f", compile_budget={b:g}" if b is not None and b != COMPILE_BUDGET else "")
        + ("" if settings.get("early_decision", True) else ", late decision")
        + (", cold start" if settings.get("warm_start") is False else "")
    )
