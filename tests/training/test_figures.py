"""The README status table's and the model cards' figures are what the committed raw files
give (`kselect write-figures --check`), and a changed raw number or a report that stops
saying a quoted figure makes the check fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kselect.training.cli.main import main
from kselect.training.figures import cards, status_table
from kselect.training.figures.raw import _json
from kselect.training.figures.registry import FIGURES
from kselect.training.figures.spans import spans, substitute
from kselect.training.figures.write import write_figures

REPO = Path(__file__).resolve().parents[2]
RAW = [
    status_table.POOLED_BENCH,
    status_table.H200_EVALUATION,
    status_table.TRANSFER,
    status_table.STRICT_DTYPES,
    status_table.AMD_README,
    status_table.FAITHFUL_README,
    cards.DTYPES_RULE,
]


@pytest.fixture
def copy(tmp_path) -> Path:
    """The docs, the sidecars and the raw files the figures read, in a scratch repository."""
    _json.cache_clear()
    docs = {doc for doc, _ in FIGURES.values()}
    sidecars = [str(p.relative_to(REPO)) for p in (REPO / "models").glob("*.meta.json")]
    for rel in [*docs, *sidecars, *RAW]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    yield tmp_path
    _json.cache_clear()


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
    readme = copy / status_table.AMD_README
    readme.write_text(readme.read_text().replace("66.5 %", "66.4 %"))
    problems = write_figures(copy, check=True)
    assert any("status.amd-top1: cannot be computed" in line and "no longer says" in line for line in problems)


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
