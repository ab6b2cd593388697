"""The held-out evaluation as a report folder: report.md, evaluation.json, plots, and where the
model scores a headroom, headroom.md and capture_vs_k.png (`kselect report` runs it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.stats import gmean

from kselect.selector.jsonable import json_default
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.held_out import SCHEMES, run_evaluation
from kselect.training.learn.model_card import update_card
from kselect.training.learn.ranking_metrics import KS, ShapeSet, outcomes
from kselect.training.learn.summary_table import NAMES, percent, summary_table
from kselect.training.learn.train import dataset_hash


def write_report(
    out: Path,
    data,
    df,
    fp: dict,
    model: CostModel,
    model_path: Path,
    folds: int,
    command: str,
    bench: bool = False,
    update_model_card: bool = False,
    log: Callable = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Evaluate held out, write the report folder `out`; returns the evaluation result.
    `progress`: the evaluation's (training/learn/held_out.py run_evaluation)."""
    out.mkdir(parents=True, exist_ok=True)
    result, costs, shapes = run_evaluation(df, fp, model, SCHEMES, folds, True, log, progress)
    result.update({"data": str(data), "dataset_hash": dataset_hash(data), "model": str(model_path), "command": command})
    if bench:
        from kselect.training.bench.rank import bench as bench_rank

        result["bench_rank"] = bench_rank(model, fp, reps=200)
    (out / "evaluation.json").write_text(json.dumps(result, indent=1, default=json_default) + "\n")
    plot_pct_vs_k(result, out / "pct_of_oracle_vs_k.png")
    plot_regret_cdf(shapes, costs["family"], out / "regret_cdf.png")
    plot_pred_vs_measured(shapes, costs["raw"]["family"], model.objective, out / "predicted_vs_measured.png")
    result["family_breakdown"] = family_breakdown(shapes, costs["family"]["cost_model"])
    (out / "report.md").write_text(render(result, model))
    if "headroom_capture" in result:
        from kselect.training.learn.headroom_report import plot_capture_vs_k, render_headroom, top_headroom_rows
        from kselect.training.learn.nearest_table import LOOKUP

        plot_capture_vs_k(result["headroom_capture"]["family"], out / "capture_vs_k.png")
        rows = top_headroom_rows(
            shapes,
            {k: v for k, v in costs["family"].items() if k != "cost_model_aten_first"},
            bool(getattr(model, "aten_relative", False)),
            near_cost=costs.get(LOOKUP, {}).get("family"),
        )
        (out / "headroom.md").write_text(render_headroom(result, rows))
    if update_model_card:
        update_card(Path(model_path), result)
    return result


# ---------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_pct_vs_k(result: dict, path: Path) -> None:
    plt = _plt()
    subsets = ("all", "oracle") if "oracle" in result["schemes"]["family"]["cost_model"] else ("all",)
    fig, axes = plt.subplots(2, len(subsets), figsize=(6 * len(subsets), 9), sharex=True, squeeze=False)
    for row, scheme in enumerate(SCHEMES):
        for col, subset in enumerate(subsets):
            ax = axes[row, col]
            res = result["schemes"][scheme]
            for name, r in res.items():
                if subset not in r:
                    continue
                if name == "default":
                    d = r[subset]
                    ax.axhline(
                        100 * d["pct_oracle_geomean"],
                        ls="--",
                        color="gray",
                        label=f"{NAMES[name]} ({d['candidates_median']:.0f} benchmarked, median)",
                    )
                    continue
                g = r[subset]["pct_oracle_geomean"]
                ax.plot(
                    list(KS),
                    [100 * g[k] for k in KS],
                    marker="o",
                    label=NAMES.get(name, name),
                    lw=2.5 if name == "cost_model" else 1.2,
                    ls=":" if name == "cost_model_aten_first" else "-",
                )
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(KS), [str(k) for k in KS])
            n = res["cost_model"].get(subset, {}).get("shapes", 0)
            ax.set_title(
                f"{'leave-one-family-out' if scheme == 'family' else 'GroupKFold by shape'}, {subset} shapes (n={n})"
            )
            ax.set_ylabel("geomean % of oracle")
            ax.grid(alpha=0.3)
            if row == 1:
                ax.set_xlabel("k = candidates benchmarked from the predicted top")
    axes[0, 0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_regret_cdf(shapes: ShapeSet, costs: dict, path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, k in zip(axes, (1, 4)):
        for name, c in costs.items():
            t = outcomes(shapes, c, (k,))["time"][k]
            regret = np.sort(100 * (t / shapes.best - 1))
            ax.plot(
                regret,
                np.arange(1, len(regret) + 1) / len(regret),
                label=NAMES.get(name, name),
                lw=2.5 if name == "cost_model" else 1.2,
            )
        from kselect.training.learn.ranking_metrics import default_outcome_times

        d = np.sort(100 * (default_outcome_times(shapes) / shapes.best - 1))
        ax.plot(d, np.arange(1, len(d) + 1) / len(d), ls="--", color="gray", label=NAMES["default"])
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlabel(f"regret at k={k} (% slower than oracle)")
        ax.set_ylabel("fraction of shapes")
        ax.set_title(f"leave-one-family-out, k={k}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_pred_vs_measured(
    shapes: ShapeSet, cost: np.ndarray, objective: str, path: Path, max_points: int = 30000
) -> None:
    plt = _plt()
    ok = np.isfinite(shapes.time) & np.isfinite(cost)
    shifted = cost - np.minimum.reduceat(np.where(ok, cost, np.inf), shapes.starts)[shapes.sid]
    idx = np.flatnonzero(ok)
    if len(idx) > max_points:
        idx = np.random.default_rng(0).choice(idx, max_points, replace=False)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    ax.scatter(np.log2(shapes.rel[idx]), shifted[idx], s=2, alpha=0.25)
    ax.set_xlabel("measured log2(time / shape's best)")
    ax.set_ylabel(f"held-out predicted cost ({objective}), minus the shape's lowest")
    ax.set_title("leave-one-family-out predictions, ok rows")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------
def cost_model_detail(a: dict) -> list[str]:
    rows = [
        ("geomean % of oracle", "pct_oracle_geomean"),
        ("1st percentile % of oracle", "pct_oracle_p1"),
        ("worst % of oracle", "pct_oracle_min"),
        ("recall (a pick within 2%)", "recall"),
        ("regret p50 %", "regret_p50"),
        ("regret p95 %", "regret_p95"),
        ("regret p99 %", "regret_p99"),
        ("regret max %", "regret_max"),
        ("DEFAULT beats ours by > 2% (% of shapes)", "default_beats_ours"),
    ]
    lines = ["| metric | " + " | ".join(f"k={k}" for k in KS) + " |", "| --- |" + " --- |" * len(KS)]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(percent(a[key][k]) for k in KS) + " |")
    lines.append(
        "| top-k all failed -> ATen fallback (shapes) | " + " | ".join(str(a["all_failed"][k]) for k in KS) + " |"
    )
    return lines


def confusion_table(conf: dict) -> list[str]:
    used = [c for c in conf if sum(conf[c].values()) or any(conf[r][c] for r in conf)]
    lines = ["| oracle's template \\ our top-1 | " + " | ".join(used) + " |", "| --- |" + " --- |" * len(used)]
    for a in used:
        lines.append(f"| {a} | " + " | ".join(str(conf[a][b]) for b in used) + " |")
    return lines


def family_breakdown(shapes: ShapeSet, cost: np.ndarray) -> dict:
    """Held-out geomean % of oracle per model family, and for shapes whose N or K is not a
    multiple of 8 (unaligned leading dimensions, where cuBLAS leaves its fast kernels)."""
    o = outcomes(shapes, cost, KS)
    first = shapes.rows.iloc[shapes.starts]
    unaligned = ((first["N"].to_numpy() % 8) != 0) | ((first["K"].to_numpy() % 8) != 0)
    groups = {f"family={f}": shapes.family == f for f in np.unique(shapes.family)}
    groups.update({"N and K multiples of 8": ~unaligned, "N or K not a multiple of 8": unaligned})
    out = {}
    for name, mask in groups.items():
        if mask.any():
            out[name] = {
                "shapes": int(mask.sum()),
                **{k: float(gmean(shapes.best[mask] / o["time"][k][mask])) for k in KS},
            }
    return out


def render(result: dict, model: CostModel) -> str:
    meta = getattr(model, "metadata_", {})
    fam, shp = result["schemes"]["family"], result["schemes"]["shape"]
    L = [
        f"# Cost model report: {Path(result['model']).stem}",
        "",
        f"Data `{result['data']}` (sha256 `{result['dataset_hash'][:16]}…`), {result['shapes']} shapes "
        f"({fam['cost_model']['all']['oracle_shapes']} with the full exhaustive space measured), "
        f"device {meta.get('gpu_name')} (`{meta.get('fingerprint_id')}`). Model objective "
        f"`{result['objective']}`; held-out numbers retrain it per fold. Command: `{result['command']}`.",
        "",
        "Every number is geomean % of oracle over held-out shapes when the best measured of the "
        "predicted top-k is taken. On non-oracle shapes the oracle is the best of the measured "
        "sample (ATen + DEFAULT + ~200 sampled), so the 'oracle shapes' tables are the strict ones.",
        "Stock DEFAULT benchmarks its whole list (ATen + Triton DEFAULT configs), whatever k.",
        "",
        "## Leave-one-model-family-out (primary)",
        "",
        "### All shapes",
        "",
        *summary_table(fam, "all"),
        "",
    ]
    if "oracle" in fam["cost_model"]:
        L += ["### Oracle shapes", "", *summary_table(fam, "oracle"), ""]
    L += ["## GroupKFold by shape (5 folds)", "", "### All shapes", "", *summary_table(shp, "all"), ""]
    if "oracle" in shp["cost_model"]:
        L += ["### Oracle shapes", "", *summary_table(shp, "oracle"), ""]
    L += [
        "## Cost model detail (leave-one-family-out, all shapes)",
        "",
        *cost_model_detail(fam["cost_model"]["all"]),
        "",
    ]
    if "oracle" in fam["cost_model"]:
        L += ["### Oracle shapes", "", *cost_model_detail(fam["cost_model"]["oracle"]), ""]
    if "cascade_check" in result:
        L += [
            "### Cost of the selection-time cascade (geomean % of oracle, all shapes)",
            "",
            "Selection scores every row with the first trees and re-scores the best few with all "
            "of them (to fit the latency budget); this compares it with all trees on every row.",
            "",
            "| scheme | ranking | " + " | ".join(f"k={k}" for k in KS) + " |",
            "| --- | --- |" + " --- |" * len(KS),
        ]
        for scheme, c in result["cascade_check"].items():
            for label, g in c.items():
                L.append(f"| {scheme} | {label} | " + " | ".join(percent(g[k]) for k in KS) + " |")
        L.append("")
    if "family_breakdown" in result:
        L += [
            "### Breakdown (leave-one-family-out, geomean % of oracle)",
            "",
            "| shapes | n | " + " | ".join(f"k={k}" for k in KS) + " |",
            "| --- | --- |" + " --- |" * len(KS),
        ]
        for name, r in result["family_breakdown"].items():
            L.append(f"| {name} | {r['shapes']} | " + " | ".join(percent(r[k]) for k in KS) + " |")
        L.append("")
    L += [
        "## Template confusion (top-1, leave-one-family-out, all shapes)",
        "",
        *confusion_table(fam["cost_model"]["all"]["template_confusion"]),
        "",
    ]
    for key, label in (("targets", "all shapes"), ("targets_oracle_shapes", "oracle shapes only")):
        if key not in result:
            continue
        L += [f"## Targets (leave-one-family-out, {label})", "", "| target | measured | met |", "| --- | --- | --- |"]
        for name, (value, met) in result[key].items():
            shown = ", ".join(value) if isinstance(value, list) else percent(value)
            L.append(f"| {name} | {shown or 'none worse'} | {'yes' if met else '**no**'} |")
        L.append("")
    L += [
        "## In-sample (the shipped model on its own training data: optimistic)",
        "",
        "| k | " + " | ".join(str(k) for k in KS) + " |",
        "| --- |" + " --- |" * len(KS),
        "| geomean % of oracle | "
        + " | ".join(percent(result["in_sample"]["all"]["pct_oracle_geomean"][k]) for k in KS)
        + " |",
        "",
    ]
    if "bench_rank" in result:
        b = result["bench_rank"]
        L += [
            "## Ranking cost",
            "",
            f"Featurise + predict all {b['candidates']} candidates of {b['problem']} on one core, one thread: "
            f"median {b['total_median_ms']:.2f} ms wall (p90 {b['total_p90_ms']:.2f} ms; featurise "
            f"{b['featurize_median_ms']:.2f} ms, {b['trees']} trees), median thread CPU time "
            f"{b['cpu_median_ms']:.2f} ms; 1-minute load average {b['load_average_1min']:.1f} on "
            f"{b['cpus']} CPUs during the run.",
            "",
        ]
    t = result["timings"]
    L += ["## Timings", "", "| step | seconds |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in t.items()]
    L += ["", "Plots: `pct_of_oracle_vs_k.png`, `regret_cdf.png`, `predicted_vs_measured.png`.", ""]
    return "\n".join(L)
