"""Write every registered figure into its doc, or check that each doc says what its raw
files give: one pass over the files the registry names."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kselect.training.figures.registry import FIGURES
from kselect.training.figures.spans import spans, substitute


def write_figures(root: Path, check: bool = False, figures: dict | None = None) -> list[str]:
    """Compute every figure from `root`'s raw files and, unless `check`, write it into its
    span. Returns one line per problem: a figure whose written text differs from its raw
    files (in check mode), one that cannot be computed, a registered figure with no span in
    its doc, a span no figure is registered for. Empty: the docs hold what the files give."""
    root = Path(root)
    figures = FIGURES if figures is None else figures
    by_doc: dict[str, dict] = defaultdict(dict)
    for name, (doc, compute) in figures.items():
        by_doc[doc][name] = compute
    problems = []
    for doc, computations in sorted(by_doc.items()):
        text = (root / doc).read_text()
        values = {}
        for name, compute in computations.items():
            try:
                values[name] = compute(root)
            except (KeyError, IndexError, ValueError, FileNotFoundError) as exc:
                problems.append(f"{doc}: {name}: cannot be computed from its raw files: {exc!r}")
        written = dict(spans(text))
        problems += [f"{doc}: {name}: no marked span for it" for name in computations if name not in written]
        problems += [
            f"{doc}: {name}: a span no figure is registered for" for name in written if name not in computations
        ]
        new = substitute(text, values)
        if check:
            fresh = dict(spans(new))
            problems += [
                f"{doc}: {name}: {_difference(written[name], fresh[name])}"
                for name in values
                if name in written and written[name] != fresh[name]
            ]
        elif new != text:
            (root / doc).write_text(new)
    return problems


def _difference(written: str, derived: str) -> str:
    """What differs, short: the first line that does (a block's span is many lines)."""
    pairs = zip(written.splitlines() or [""], derived.splitlines() or [""])
    old, new = next(((a, b) for a, b in pairs if a != b), (written, derived))
    return f"written {old!r}, its raw files give {new!r}"
