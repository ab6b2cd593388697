"""Reading a figure's committed raw file and writing its number as the docs do.

Raw files are JSON, JSON lines and CSV (a report's results, a model's sidecar) and a report's
README for the figures only it states; nothing is unpickled, re-measured or retrained here."""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path


@cache
def _json(path: Path):
    return json.loads(path.read_text())


def load_json(root: Path, rel: str):
    """A committed JSON file under the repository `root` (read once per process)."""
    return _json(Path(root) / rel)


def pct(share: float) -> str:
    """A share as the docs' percentage, one decimal: 0.8420 -> '84.2'."""
    return f"{100 * share:.1f}"


def seed_range(shares: list[float]) -> str:
    """The seeds' range of a share, as the docs write it: '83.3..84.7'."""
    return f"{pct(min(shares))}..{pct(max(shares))}"


def times(ratio: float, places: int = 3) -> str:
    """A speed ratio: 1.0405 -> '1.040' (the docs add the 'x')."""
    return f"{ratio:.{places}f}"


def quoted(root: Path, readme: str, text: str) -> str:
    """A figure only a report's README states (no committed raw rows give it): `text` as long
    as that README still says it (whitespace and line breaks aside), else a ValueError."""
    said = " ".join(Path(root, readme).read_text().split())
    if " ".join(text.split()) not in said:
        raise ValueError(f"{readme} no longer says {text!r}")
    return text


@cache
def _lines(path: Path) -> tuple:
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


def load_jsonl(root: Path, rel: str) -> tuple:
    """A committed JSON-lines file's rows (a bench's results.jsonl), read once per process."""
    return _lines(Path(root) / rel)


@cache
def _csv(path: Path) -> tuple:
    with path.open(newline="") as f:
        return tuple(csv.DictReader(f))


def load_csv(root: Path, rel: str) -> tuple:
    """A committed CSV file's rows as dicts of strings, read once per process."""
    return _csv(Path(root) / rel)


def clear() -> None:
    """Forget every file read (a test that edits raw files in a scratch copy calls it)."""
    for reader in (_json, _lines, _csv):
        reader.cache_clear()
