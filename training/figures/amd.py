"""The AMD backend-winner's figures (models/amd-backend-winner.md and the README's AMD row).

Its sidecar gives the training tables and their rows; its scores only its report's README
states (the aiter tables live outside the repository, so no raw rows are committed). Those are
read from that README's own tables and sentences, so a figure fails the check once the report
stops saying it."""

from __future__ import annotations

import re
from pathlib import Path

from kselect.training.figures.raw import load_json, quoted

CARD = "models/amd-backend-winner.md"
SIDECAR = "models/amd-backend-winner.meta.json"
README = "reports/2026-12-02-amd-backend-winner/README.md"

HELD_OUT = "leave-one-table-out (held out, shipped settings)"
NESTED = "leave-one-table-out, nested selection (settings chosen per fold)"
FRESH = "fresh tables: 3 newer aiter tables"
IN_SAMPLE = "in-sample (shipped model, its training rows)"


def report_table(root: Path, header: str) -> dict[str, dict[str, str]]:
    """The report README's Markdown table whose header row starts `| header |`: first cell ->
    {column: cell}, bold marks dropped."""
    lines = Path(root, README).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    columns = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace("**", "") for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(columns, cells))
    return rows


def _scope(root: Path, prefix: str) -> dict[str, str]:
    """One row of the report's metrics table, by how its scope begins."""
    table = report_table(root, "scope")
    return next(row for scope, row in table.items() if scope.startswith(prefix))


def metrics_table(root: Path) -> str:
    """The card's metrics table: the model held out, nested, the two baselines, in-sample."""
    held, nested, sample = _scope(root, HELD_OUT), _scope(root, NESTED), _scope(root, IN_SAMPLE)

    def row(name: str, top1: str, top2: str, within: str) -> str:
        return f"| {name} | {top1} % | {top2} % | {within}{' %' if within != '-' else ''} |\n"

    return (
        "| | top-1 | top-2 | top-1 within 5 % |\n|---|---|---|---|\n"
        f"| **this model (held out)** | **{held['model top-1']} %** | **{held['model top-2']} %** "
        f"| {held['model within-5%']} % |\n"
        + row("nested: settings chosen by CV inside each training fold", *_model(nested))
        + row("majority backend per arch", held["majority top-1"], held["majority top-2"], "-")
        + row("nearest shape (log M, N, K; same arch)", held["nearest top-1"], held["nearest top-2"], "-")
        + row("this model in-sample (its own training rows)", *_model(sample))
    )


def _model(row: dict[str, str]) -> tuple[str, str, str]:
    return row["model top-1"], row["model top-2"], row["model within-5%"]


def per_arch(root: Path) -> str:
    """Held-out top-1 per arch beside the majority vote's, the arch the model helps most first."""
    table = report_table(root, "arch")
    order = sorted(table, key=lambda a: float(table[a]["model top-1"]) - float(table[a]["majority top-1"]))[::-1]
    first, *rest = order
    parts = [f"{first} {table[first]['model top-1']} % (majority {table[first]['majority top-1']} %)"]
    parts += [f"{a} {table[a]['model top-1']} % ({table[a]['majority top-1']} %)" for a in rest]
    return ", ".join(parts)


def fresh(root: Path) -> str:
    row = _scope(root, FRESH)
    return (
        f"{row['n']} rows) it scores {row['model top-1']} % / {row['model top-2']} %, against "
        f"{row['majority top-1']} % / {row['majority top-2']} %"
    )


def training_tables(root: Path) -> str:
    """The data table: each training table's rows (the sidecar's, checked against the report's
    per-table counts), the unmeasured rows the report says it dropped, and its SHA-256."""
    held_out = report_table(root, "held-out table")
    dropped = {
        f"{name}_bf16_tuned_gemm.csv": int(n)
        for name, n in re.findall(r"`(\w+)` \((\d+)\)", quoted(root, README, "`dsv3` (114) and `gptoss` (128)"))
    }
    lines = ["| table | rows in file | rows used | sha256 |", "|---|---|---|---|"]
    for t in load_json(root, SIDECAR)["tables"]:
        if held_out[t["name"]]["n"] != str(t["rows_used"]):
            raise ValueError(
                f"{t['name']}: the sidecar uses {t['rows_used']} rows, the report scores {held_out[t['name']]['n']}"
            )
        lines.append(
            f"| {t['name']} | {t['rows_used'] + dropped.get(t['name'], 0)} | {t['rows_used']} | {t['sha256']} |"
        )
    return "\n".join(lines) + "\n"


def _said(text: str, *, field: int = 0):
    """A figure the report states in a sentence: its `field`-th word (bold, brackets and
    punctuation dropped), checked by `quoted`."""
    return lambda r: quoted(r, README, text).split()[field].strip("*(),;:")


FIGURES = {
    "amd.training-rows": (CARD, lambda r: str(load_json(r, SIDECAR)["training_rows"])),
    "amd.tables": (CARD, training_tables),
    "amd.unmeasured": (CARD, _said("242 of 2591 rows")),
    "amd.metrics": (CARD, metrics_table),
    "amd.per-arch": (CARD, per_arch),
    "amd.fresh": (CARD, fresh),
    "amd.inner-top1": (CARD, _said("(inner top-1: 66.5 / **67.6** / 63.6 / 63.2 %)", field=4)),
    "amd.inner-150": (CARD, _said("(inner top-1: 66.5 / **67.6** / 63.6 / 63.2 %)", field=2)),
    "amd.recipe": (CARD, _said("top-1 67.6 % with the recipe vs 63.2 % without", field=1)),
    "amd.no-recipe": (CARD, _said("top-1 67.6 % with the recipe vs 63.2 % without", field=7)),
    "amd.features": (CARD, _said("53 features")),
    "amd.neighbour": (CARD, _said("right for only **81.8 %**", field=3)),
    "amd.neighbours": (CARD, _said("M's winners for only **91.0 %**", field=4)),
    "amd.not-fastest": (CARD, _said("87 measured rows (3.7 %)", field=3)),
    "amd.near-tied": (CARD, _said("182 rows (7.7 %)", field=2)),
    "status.amd-top1": ("README.md", lambda r: _scope(r, HELD_OUT)["model top-1"]),
    "status.amd-top2": ("README.md", lambda r: _scope(r, HELD_OUT)["model top-2"]),
}
