"""A dataset's headroom over ATen before any model is trained: per op kind (an fp8 scaled_mm's
scaling apart) and M class, how much faster than ATen the best measured candidate ran, and the
candidates recorded wrong, counted per template with their configs.

The rows are read as collected: training's labels also fold in a dataset's re-timed rows
(`kselect dataset summary` names them), so the held-out capture's headroom can differ.

This is what rule C asks of a new collection before training (reports/device/rules.md, "C. fp8
`_scaled_mm`"): the headroom over ATen by M class, and every `wrong_result` row reported and
counted per template. `kselect dataset headroom PATH` prints it.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kselect.training.learn.headroom import M_CLASSES, room_stats, shape_table
from kselect.training.learn.ranking_metrics import ShapeSet

# the columns that name a candidate's config in a wrong row's report
CONFIG_COLUMNS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps", "GROUP_M", "k_split")


def shape_kinds(table: dict) -> np.ndarray:
    """Per shape its kind: the op kind the capture figures split by (a scaled_mm with its scaling,
    op_capture.shape_ops) and the operands' dtype (`scaled_mm:rowwise fp8e4m3`, `mm bf16`)."""
    return np.array([f"{op} {dtype}" for op, dtype in zip(table["op"], table["dtype"], strict=True)], dtype=str)


def headroom_before_training(shapes: ShapeSet) -> dict:
    """The headroom summary of a dataset's measured shapes (no model read).

    Shapes where ATen has no ok row are counted apart (`no_aten`): their headroom is unknown.
    Decision-free shapes (M = 1, or N / K padded) are left out of the kinds, as the capture
    figures leave them out, and counted."""
    table = shape_table(shapes)
    kinds = shape_kinds(table)
    has_aten = np.isfinite(shapes.aten_time)
    room = np.where(has_aten, np.log(np.where(has_aten, shapes.aten_time, 1.0) / shapes.best), 0.0)
    real = has_aten & ~table["decision_free"]
    by_kind = {}
    for kind in sorted(set(kinds[real])):
        mask = real & (kinds == kind)
        by_kind[kind] = {
            "all": room_stats(room[mask]),
            "classes": {
                name: room_stats(room[mask & (table["m_class"] == i)]) for i, (name, _, _) in enumerate(M_CLASSES)
            },
            "oracle_shapes": int((mask & shapes.oracle).sum()),
        }
    return {
        "shapes": shapes.n_shapes,
        "no_aten": int((~has_aten).sum()),
        "decision_free": int((has_aten & table["decision_free"]).sum()),
        "dropped": int(shapes.dropped),
        "kinds": by_kind,
        "wrong": wrong_rows(shapes),
    }


def wrong_rows(shapes: ShapeSet) -> dict:
    """Every `wrong_result` row: counted per template, and listed with its shape and config."""
    rows = shapes.rows
    wrong = rows[rows["status"] == "wrong_result"]
    templates = wrong["backend"].astype(str) + ":" + wrong["template"].astype(str)  # as `dataset summary` names them
    listed = []
    for (_, row), template in zip(wrong.iterrows(), templates, strict=True):
        config = {c: row[c] for c in CONFIG_COLUMNS if c in row and row[c] == row[c] and row[c] not in ("", None)}
        listed.append(
            {
                "problem_key": str(row["problem_key"]),
                "candidate_key": str(row["candidate_key"]),
                "template": template,
                "config": {k: (int(v) if float(v).is_integer() else float(v)) for k, v in config.items()},
                "error": str(row.get("error", "") or "")[:200],
            }
        )
    return {"rows": len(listed), "per_template": dict(sorted(Counter(templates).items())), "listed": listed}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{(1 / v - 1):+.1%}"


def headroom_text(summary: dict) -> str:
    """The summary as Markdown: a table per kind by M class, then the wrong rows."""
    lines = [
        f"{summary['shapes']} shapes measured; {summary['no_aten']} without an ok ATen row, "
        f"{summary['decision_free']} decision-free (M = 1 or padded), {summary['dropped']} with no ok row: "
        "left out below.",
        "",
        "| kind | M class | shapes | best measured vs ATen (geomean speed-up) | shapes >= 5 % faster | oracle shapes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind, got in summary["kinds"].items():
        cells = [("all", got["all"])] + list(got["classes"].items())
        for name, s in cells:
            oracle = str(got["oracle_shapes"]) if name == "all" else ""
            lines.append(
                f"| {kind} | {name} | {s['shapes']} | {_pct(s['best_over_aten_geomean'])} | "
                f"{s['shapes_gain_ge_5pct']} | {oracle} |"
            )
    wrong = summary["wrong"]
    lines += [
        "",
        f"Wrong results: {wrong['rows']} rows" + (" (never labels, picks or the best above)" if wrong["rows"] else ""),
    ]
    lines += [f"- {t}: {n}" for t, n in wrong["per_template"].items()]
    lines += [f"  - {w['problem_key']} {w['candidate_key']} {w['config']} {w['error']}" for w in wrong["listed"]]
    return "\n".join(lines)
