"""`kselect bench gemm`'s report: README.md (targets, per variant, decision phases, ratios, per
shape) and summary.json beside results.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.bench.gemm_summary import combine_repeats
from kselect.training.bench.gemm_variants import VARIANTS


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
