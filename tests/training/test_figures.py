"""The README status table's and the model cards' figures are what the committed raw files
give (`kselect write-figures --check`), and a changed raw number or a report that stops
saying a quoted figure makes the check fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kselect.training.cli.main import main
from kselect.training.figures import amd, cards, gpu_runs, raw, status_table
from kselect.training.figures.registry import FIGURES
from kselect.training.figures.spans import spans, substitute
from kselect.training.figures.write import write_figures

REPO = Path(__file__).resolve().parents[2]
RAW = [
    status_table.POOLED_BENCH,
    status_table.H200_EVALUATION,
    status_table.TRANSFER,
    status_table.STRICT_DTYPES,
    amd.README,
    cards.DTYPES_RULE,
    *gpu_runs.RAW,
]


@pytest.fixture
def copy(tmp_path) -> Path:
    """The docs, the sidecars and the raw files the figures read, in a scratch repository."""
    raw.clear()
    docs = {doc for doc, _ in FIGURES.values()}
    sidecars = [str(p.relative_to(REPO)) for p in (REPO / "models").glob("*.meta.json")]
    for rel in [*docs, *sidecars, *RAW]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    yield tmp_path
    raw.clear()


def test_the_committed_docs_hold_what_the_raw_files_give():
    assert write_figures(REPO, check=True) == []


def test_a_changed_raw_number_fails_the_check_and_write_puts_it_right(copy):
    transfer = json.loads((copy / status_table.TRANSFER).read_text())
    strict = transfer["cards"]["H100"]["metrics"]["verify"]["per_seed"]["pooled_family_out"]
    strict[:] = [0.5] * len(strict)  # every seed's strict capture on the H100 now 50 %
    (copy / status_table.TRANSFER).write_text(json.dumps(transfer))

    problems = write_figures(copy, check=True)
    named = {line.split(": ")[1] for line in problems}
    assert {"status.hopper-bf16-strict-h100", "hopper-bf16.strict-h100", "hopper-bf16.strict-h100-seeds"} <= named
    assert "README.md: status.hopper-bf16-strict-h100: written '84.2', its raw files give '50.0'" in problems
    assert main(["write-figures", "--check", "--root", str(copy)]) == 1

    assert write_figures(copy) == []
    assert write_figures(copy, check=True) == []
    assert (
        "<!-- figure: hopper-bf16.strict-h100 -->50.0<!-- /figure -->" in (copy / "models/hopper-bf16.md").read_text()
    )


def test_a_changed_sidecar_fails_the_card_check(copy):
    meta_path = copy / "models/h200-bf16.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["training"]["dataset_rows"] += 1
    meta_path.write_text(json.dumps(meta))
    problems = write_figures(copy, check=True)
    assert len(problems) == 1 and problems[0].startswith(
        "models/h200-bf16.md: card.h200-bf16: written '| rows / shapes"
    )


def test_a_report_that_stops_saying_a_quoted_figure_fails_the_check(copy):
    readme = copy / amd.README
    readme.write_text(readme.read_text().replace("(3.7 %)", "(3.8 %)"))
    problems = write_figures(copy, check=True)
    assert any("amd.not-fastest: cannot be computed" in line and "no longer says" in line for line in problems)


def test_a_changed_report_table_fails_the_amd_figures(copy):
    readme = copy / amd.README
    text = readme.read_text().replace("| gfx950 | 1800 | 59.7 |", "| gfx950 | 1800 | 58.7 |")
    readme.write_text(text.replace("| **66.5** | **83.1** |", "| **66.4** | **83.1** |"))
    problems = write_figures(copy, check=True)
    assert "README.md: status.amd-top1: written '66.5', its raw files give '66.4'" in problems
    assert any(
        line.startswith("models/amd-backend-winner.md: amd.per-arch: written 'gfx950 59.7 %") for line in problems
    )
    assert any(
        line.startswith("models/amd-backend-winner.md: amd.metrics: written '| **this model") for line in problems
    )


def test_a_changed_bench_row_fails_the_gpu_rows(copy):
    """One verify time of the unseen run, 1.3x slower, moves its speed; one row of the
    faithful-kernels CSV moves that row's median."""
    path = copy / gpu_runs.UNSEEN_VERIFY
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["variant"] == "kselect-verify" and row["problem"] == "mm:2x3584x3584:bf16:nt":
            row["kernel_ms"] *= 1.3
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    problems = write_figures(copy, check=True)
    named = {line.split(": ")[1] for line in problems}
    assert named == {"status.unseen.verify"}, problems

    raw.clear()
    path = copy / gpu_runs.DECODE_WARM_START
    pooled = json.loads(path.read_text())
    for comparison in pooled["setups"][0]["comparisons"]:
        if comparison["comparison"] == "verify compile / plain's":
            comparison["ratio"] = 1.3
    path.write_text(json.dumps(pooled))
    assert "README.md: status.decode1.verify: written '1.147', its raw files give '1.300'" in write_figures(
        copy, check=True
    )


def test_a_lost_span_and_an_unregistered_one_fail_the_check(copy):
    readme = copy / "README.md"
    text = readme.read_text()
    text = text.replace("<!-- figure: status.h200-verify -->89.0<!-- /figure -->", "89.0")
    readme.write_text(text + "\n<!-- figure: status.nothing -->1<!-- /figure -->\n")
    problems = write_figures(copy, check=True)
    assert "README.md: status.h200-verify: no marked span for it" in problems
    assert "README.md: status.nothing: a span no figure is registered for" in problems


def test_spans_are_found_and_replaced_inline_and_as_blocks():
    text = "a <!-- figure: x -->1.0<!-- /figure --> b\n<!-- figures:begin t -->\nold\n<!-- figures:end -->\n"
    assert spans(text) == [("t", "old\n"), ("x", "1.0")]
    new = substitute(text, {"x": "2.5", "t": "new line\n"})
    assert (
        new == "a <!-- figure: x -->2.5<!-- /figure --> b\n<!-- figures:begin t -->\nnew line\n<!-- figures:end -->\n"
    )
    assert substitute(text, {}) == text


def test_retraining_rewrites_only_the_cards_own_block(tmp_path):
    """write_card keeps a card's hand-written sections and their figures' marks; a new card
    is its block alone, so the next retraining keeps what is written around it."""
    from kselect.training.learn.model_card import write_card

    shutil.copy(REPO / "models/hopper-bf16.meta.json", tmp_path / "hopper-bf16.meta.json")
    shutil.copy(REPO / "models/hopper-bf16.md", tmp_path / "hopper-bf16.md")
    before = (tmp_path / "hopper-bf16.md").read_text()
    meta = json.loads((tmp_path / "hopper-bf16.meta.json").read_text())
    meta["training"]["dataset_rows"] += 1
    (tmp_path / "hopper-bf16.meta.json").write_text(json.dumps(meta))

    write_card(tmp_path / "hopper-bf16.json")
    after = (tmp_path / "hopper-bf16.md").read_text()
    tail = before.split("<!-- figures:end -->", 1)[1]
    assert after != before and after.split("<!-- figures:end -->", 1)[1] == tail
    assert "<!-- figure: hopper-bf16.strict-h100 -->" in after
    assert str(meta["training"]["dataset_rows"]) in dict(spans(after))["card.hopper-bf16"]

    (tmp_path / "fresh.meta.json").write_text(json.dumps(meta))
    fresh = write_card(tmp_path / "fresh.json").read_text()
    assert fresh.startswith("<!-- figures:begin card.fresh -->\n# Model card") and fresh.endswith(
        "<!-- figures:end -->\n"
    )
