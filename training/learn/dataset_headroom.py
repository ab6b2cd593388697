"""A dataset's headroom over ATen before any model is trained: per op kind (an fp8 scaled_mm's
scaling apart) and M class, how much faster than ATen the best measured candidate ran, and the
candidates recorded wrong, counted per template and listed by candidate key (which names the
config).

The rows are read as collected: training's labels also fold in a dataset's re-timed rows
(`kselect dataset summary` names them), so the held-out capture's headroom can differ.

This is what rule C asks of a new collection before training (reports/device/rules.md, "C. fp8
`_scaled_mm`"): the headroom over ATen by M class, and every `wrong_result` row reported and
counted per template. `kselect dataset headroom PATH` prints it.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from kselect.training.learn.headroom import M_CLASSES, headroom, room_stats, shape_table
from kselect.training.learn.ranking_metrics import ShapeSet


def shape_kinds(table: dict) -> np.ndarray:
    """Per shape its kind: the op kind the capture figures split by (a scaled_mm with its scaling,
    op_capture.shape_ops) and the operands' dtype (`scaled_mm:rowwise fp8e4m3`, `mm bf16`)."""
    return np.array([f"{op} {dtype}" for op, dtype in zip(table["op"], table["dtype"], strict=True)], dtype=str)


def headroom_before_training(rows: pd.DataFrame) -> dict:
    """The headroom summary of a dataset's rows (no model read).

    Shapes where ATen has no ok row are counted apart (`no_aten`): their headroom is unknown.
    Decision-free shapes (M = 1, or N / K padded) are left out of the kinds, as the capture
    figures leave them out, and counted. The wrong rows are read from every row, a shape with no
    ok row (which the headroom cannot count) included."""
    # no DEFAULT-list reading: the headroom is the best measured against ATen alone
    shapes = ShapeSet.from_frame(rows, default_keys=lambda row: set())
    table = shape_table(shapes)
    kinds = shape_kinds(table)
    has_aten = np.isfinite(shapes.aten_time)
    room = headroom(shapes)  # inf where ATen has no ok row: those shapes are masked out below
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
        "wrong": wrong_rows(rows),
    }


def wrong_rows(rows: pd.DataFrame) -> dict:
    """Every `wrong_result` row: counted per template, and listed by shape and candidate key."""
    wrong = rows[rows["status"] == "wrong_result"]
    templates = wrong["backend"].astype(str) + ":" + wrong["template"].astype(str)  # as `dataset summary` names them
    errors = wrong["error"] if "error" in wrong else pd.Series("", index=wrong.index)
    listed = [
        {"problem_key": str(p), "candidate_key": str(c), "template": t, "error": str(e or "")[:200]}
        for p, c, t, e in zip(wrong["problem_key"], wrong["candidate_key"], templates, errors, strict=True)
    ]
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
    lines += [f"  - {w['problem_key']} {w['candidate_key']} {w['error']}" for w in wrong["listed"]]
    return "\n".join(lines)
