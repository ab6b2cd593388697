"""The headroom part of `kselect report`: capture vs k per row class (plot), the shapes with
the largest headroom and what each selection picked there (table), the summary for the card."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kselect.training.learn.headroom import (
    HEADROOM_KS,
    M_CLASSES,
    headroom,
    shape_table,
    simulate_policies,
    template_order,
)
from kselect.training.learn.op_capture import op_table
from kselect.training.learn.ranking_metrics import ShapeSet, default_outcome_times

NAMES = {
    "cost_model": "cost model (ours)",
    "random_forest": "random forest",
    "nearest_shape": "nearest shape",
    "roofline": "analytic roofline",
}


def _cap(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def plot_capture_vs_k(hc: dict, path: Path) -> None:
    """Capture of ATen + k templates per ranker, one panel per realistic row class."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    det = hc["detail"]
    panels = [("realistic", None)] + [(name, name) for name, _, _ in M_CLASSES]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.4), sharey=True)
    for ax, (title, cls) in zip(axes, panels):

        def pick(stats):
            return stats["realistic"] if cls is None else stats["classes"][cls]

        for name, curves in det["rankers"].items():
            ys = [pick(curves["aten_plus_k"][k])["capture"] for k in HEADROOM_KS]
            ax.plot(
                HEADROOM_KS,
                [np.nan if y is None else 100 * y for y in ys],
                marker="o",
                lw=2.5 if name == "cost_model" else 1.2,
                label=NAMES.get(name, name),
            )
        d = pick(det["fixed"]["default_idealised"])["capture"]
        if d is not None:
            ax.axhline(100 * d, ls="--", color="gray", label="stock DEFAULT (idealised)")
        pol = det.get("policies", {}).get("verify")
        if pol and pick(pol)["capture"] is not None:
            ax.axhline(
                100 * pick(pol)["capture"],
                ls=":",
                color="black",
                label="verify policy (0-4 templates, the last the nearest shape's)",
            )
        n = (det["shapes"]["realistic"] if cls is None else det["shapes"]["classes"][cls])["shapes"]
        ax.set_title(f"{title} (n={n})")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(HEADROOM_KS), [str(k) for k in HEADROOM_KS])
        ax.set_xlabel("k = templates timed beside ATen")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("headroom captured (%)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Headroom capture, leave-one-family-out, shapes Inductor autotunes as measured")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def top_headroom_rows(
    shapes: ShapeSet, costs: dict, aten_gap: bool, n: int = 20, near_cost: np.ndarray | None = None
) -> list[dict]:
    """The `n` realistic shapes with the largest headroom: per selection t_pick / t_ATen
    (`near_cost`: the nearest-shape lookup verify's slot reads, simulate_policies)."""
    table = shape_table(shapes)
    room = headroom(shapes)
    real = np.flatnonzero(~table["decision_free"])
    top = real[np.argsort(-room[real], kind="stable")[:n]]
    first = shapes.rows.iloc[shapes.starts]
    picks = {}
    for name, c in costs.items():
        order, rank = template_order(shapes, c)
        row = np.full(shapes.n_shapes, -1)
        row[shapes.sid[order[rank == 0]]] = order[rank == 0]
        picks[name] = row
    sim = (
        simulate_policies(shapes, costs["cost_model"], near_cost=near_cost)
        if aten_gap and "cost_model" in costs
        else None
    )
    default_t = default_outcome_times(shapes)
    out = []
    for s in top:
        r = {
            "shape": f"{first['M'].iloc[s]}x{first['N'].iloc[s]}x{first['K'].iloc[s]}",
            "family": shapes.family[s],
            "best_over_aten": float(shapes.best[s] / shapes.aten_time[s]),
            "default_idealised": float(default_t[s] / shapes.aten_time[s]),
        }
        for name, row in picks.items():
            i = row[s]
            r[f"{name}_top_template"] = shapes.rows["candidate_key"].iloc[i].split(":", 1)[-1] if i >= 0 else "-"
            r[f"{name}_top_template_over_aten"] = float(shapes.time[i] / shapes.aten_time[s]) if i >= 0 else None
        if sim is not None:
            r["predicted_gap"] = float(sim["gap"][s])
            r["verify_templates"] = int(sim["verify_templates"][s])
            r["verify_over_aten"] = float(sim["verify"][s] / shapes.aten_time[s])
            r["predict_over_aten"] = float(sim["predict"][s] / shapes.aten_time[s])
        out.append(r)
    return out


def dtype_lines(det: dict) -> list[str]:
    """Per dtype, when one model holds several: the policies' and DEFAULT's capture."""
    pol = det.get("policies", {})
    default = det["fixed"]["default_idealised"].get("dtypes")
    if not default:
        return []
    lines = ["", "Per dtype (realistic shapes):", "", "| dtype | shapes | verify | predict | DEFAULT idealised |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for dtype, d in default.items():
        v, p = (pol.get(m, {}).get("dtypes", {}).get(dtype, {}).get("capture") for m in ("verify", "predict"))
        lines.append(f"| {dtype} | {d['shapes']} | {_cap(v)} | {_cap(p)} | {_cap(d['capture'])} |")
    return lines


def render_headroom(result: dict, rows: list[dict]) -> str:
    """Markdown: capture tables (realistic, classes, decision-free, spread) and the top-20 table."""
    hc = result["headroom_capture"]["family"]
    det = hc["detail"]
    r, df = hc["realistic"], hc["decision_free"]
    sc = det["shapes"]
    lines = [
        "# Headroom capture (leave-one-model-family-out)",
        "",
        f"Realistic shapes (Inductor autotunes them as measured): {sc['realistic']['shapes']}, headroom "
        f"(sum log t_ATen / t_best) {sc['realistic']['headroom_log_sum']:.2f}, best over ATen geomean "
        f"{_num(sc['realistic']['best_over_aten_geomean'], '.4f')}, {sc['realistic']['shapes_gain_ge_5pct']} shapes "
        f">= 5 % faster than ATen. Decision-free (M = 1 or a padded N/K): {sc['decision_free']['shapes']} "
        "shapes, reported apart. Aligned / unaligned (as compiled) among the realistic: "
        f"{sc['alignment']['aligned']['shapes']} / {sc['alignment']['unaligned']['shapes']}.",
        "",
        "## Policies (the selector's own rules on the held-out scores)",
        "",
        "| policy | capture | geomean pick/ATen | worst pick/ATen | > 1 % slower | templates timed (mean) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mode in ("verify", "predict"):
        p = det.get("policies", {}).get(mode)
        if p:
            q = p["realistic"]
            lines.append(
                f"| {mode} | {_cap(q['capture'])} | {_num(q['geomean_pick_over_aten'], '.4f')} | "
                f"{_num(q['worst_pick_over_aten'], '.3f')} | {_cap(q['share_slower_1pct'])} | "
                f"{_num(p['templates_timed_mean'], '.2f')} |"
            )
    for name, f in det["fixed"].items():
        q = f["realistic"]
        lines.append(
            f"| {name} | {_cap(q['capture'])} | {_num(q['geomean_pick_over_aten'], '.4f')} | "
            f"{_num(q['worst_pick_over_aten'], '.3f')} | {_cap(q['share_slower_1pct'])} | "
            f"{'0' if name == 'always_aten' else '~27 (its list)'} |"
        )
    lines += [
        "",
        "## ATen + k templates timed (one per tile family), realistic shapes",
        "",
        "| ranker | " + " | ".join(f"k={k}" for k in HEADROOM_KS) + " | top-1 alone | top-4 alone |",
        "| --- | " + " | ".join("---" for _ in HEADROOM_KS) + " | --- | --- |",
    ]
    for name, caps in r["aten_plus_k"].items():
        tk = r["top_k"][name]
        lines.append(
            f"| {NAMES.get(name, name)} | "
            + " | ".join(_cap(caps[k]) for k in HEADROOM_KS)
            + f" | {_cap(tk[1])} | {_cap(tk[4])} |"
        )
    lines += [
        "",
        "Per row class, ATen + 4 templates (and the verify policy):",
        "",
        "| class | shapes | "
        + " | ".join(NAMES.get(n, n) for n in r["aten_plus_k"])
        + " | verify | DEFAULT idealised |",
        "| --- | --- | " + " | ".join("---" for _ in r["aten_plus_k"]) + " | --- | --- |",
    ]
    for cls, _, _ in M_CLASSES:
        cells = [_cap(det["rankers"][n]["aten_plus_k"][4]["classes"][cls]["capture"]) for n in r["aten_plus_k"]]
        v = det.get("policies", {}).get("verify", {}).get("classes", {}).get(cls, {}).get("capture")
        d = det["fixed"]["default_idealised"]["classes"][cls]["capture"]
        lines.append(f"| {cls} | {sc['classes'][cls]['shapes']} | " + " | ".join(cells) + f" | {_cap(v)} | {_cap(d)} |")
    lines += dtype_lines(det)
    lines += op_table(r.get("ops", {}))
    lines += [
        "",
        f"Decision-free shapes ({df['shapes']}), apart: cost model ATen + k "
        + ", ".join(f"k={k} {_cap(v)}" for k, v in df["aten_plus_k"].get("cost_model", {}).items())
        + f"; verify {_cap(df['verify'])}, predict {_cap(df['predict'])}.",
        "",
        "## Fold to fold (one family held out per fold; realistic capture)",
        "",
        "| selection | "
        + " | ".join(f.split("=", 1)[-1] for f in r["fold_spread"]["cost_model@aten+1"]["per_fold"])
        + " | max - min | sd |",
        "| --- | " + " | ".join("---" for _ in r["fold_spread"]["cost_model@aten+1"]["per_fold"]) + " | --- | --- |",
    ]
    for name, s in r["fold_spread"].items():
        lines.append(
            f"| {name} | "
            + " | ".join(_cap(v) for v in s["per_fold"].values())
            + f" | {_cap(s['spread'])} | {_cap(s['sd'])} |"
        )
    names = [
        n for n in ("cost_model", "nearest_shape", "random_forest") if f"{n}_top_template" in (rows[0] if rows else {})
    ]
    lines += [
        "",
        "## The 20 realistic shapes with the largest headroom",
        "",
        "t / t_ATen of each pick (lower is faster; the rankers' first template, DEFAULT's best "
        "of its list, the policies' outcome).",
        "",
        "| shape | family | best | DEFAULT | "
        + " | ".join(f"{NAMES[n]} top template" for n in names)
        + " | gap predicted | verify (templates) | predict |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in names) + " | --- | --- | --- |",
    ]
    for x in rows:
        cells = [
            f"{x[n + '_top_template_over_aten']:.3f} `{x[n + '_top_template']}`"
            if x[n + "_top_template_over_aten"] is not None
            else "-"
            for n in names
        ]
        pol = (
            f" | {x['predicted_gap']:+.3f} | {x['verify_over_aten']:.3f} ({x['verify_templates']}) | "
            f"{x['predict_over_aten']:.3f}"
            if "verify_over_aten" in x
            else " | | |"
        )
        lines.append(
            f"| {x['shape']} | {x['family']} | {x['best_over_aten']:.3f} | {x['default_idealised']:.3f} | "
            + " | ".join(cells)
            + pol
            + " |"
        )
    return "\n".join(lines) + "\n"


def card_lines(result: dict) -> list[str]:
    """The headroom capture lines of the model card."""
    hc = result.get("headroom_capture", {}).get("family")
    if not hc:
        return []
    r = hc["realistic"]
    ours = r["aten_plus_k"].get("cost_model", {})
    near = r["aten_plus_k"].get("nearest_shape", {})
    return [
        "",
        f"**Headroom capture**, leave-one-family-out, {r['shapes']} shapes Inductor autotunes as measured "
        "(share of the measured log-gain of the best candidate over ATen that a selection keeps): "
        f"verify policy {_cap(r['verify'])}, predict {_cap(r['predict'])}; ATen + k templates "
        + ", ".join(f"k={k} {_cap(v)}" for k, v in ours.items())
        + " (nearest shape "
        + ", ".join(f"k={k} {_cap(v)}" for k, v in near.items())
        + "; stock DEFAULT "
        f"idealised {_cap(r['fixed']['default_idealised'])}).",
    ]
