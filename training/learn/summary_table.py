"""The held-out evaluation's summary as a Markdown table, one row per ranker: % of the oracle at
each k, top-1 and the p99 regret (the report's and the model card's)."""

from __future__ import annotations

from kselect.training.learn.ranking_metrics import KS

NAMES = {
    "cost_model": "cost model (ours)",
    "cost_model_aten_first": "ours, ATen always 1st of the k",
    "roofline": "analytic roofline/waves",
    "random_forest": "random forest",
    "nearest_shape": "nearest-shape lookup",
    "default": "stock DEFAULT",
}


def percent(x) -> str:
    """A fraction as a percentage with two decimals."""
    return f"{100 * float(x):.2f}"


def summary_table(res: dict, subset: str) -> list[str]:
    lines = [
        "| ranker | " + " | ".join(f"k={k}" for k in KS) + " | top-1 | p99 regret k=4 |",
        "| --- |" + " --- |" * (len(KS) + 2),
    ]
    for name, r in res.items():
        if subset not in r:
            continue
        a = r[subset]
        if name == "default":
            lines.append(
                f"| {NAMES[name]} (benchmarks ~{a['candidates_median']:.0f}) | "
                + " | ".join(percent(a["pct_oracle_geomean"]) for _ in KS)
                + f" | {percent(a['top1'])} | {percent(a['regret_p99'])} |"
            )
        else:
            g = a["pct_oracle_geomean"]
            lines.append(
                f"| {NAMES.get(name, name)} | "
                + " | ".join(percent(g[k]) for k in KS)
                + f" | {percent(a['top1'])} | {percent(a['regret_p99'][4])} |"
            )
    return lines
