"""A card's measured picks, shipped in models/picks/<card>.json (written from the card's datasets
by `kselect export-measured-picks`, training/data/measured_picks.py): for every GEMM measured on
that card, the candidate that ran fastest where it beat ATen beyond the measurement's noise,
else ATen. Predict serves an exact hit from it with zero benchmarks, the pick measured rather
than predicted; every other GEMM is the cost model's.

A table is this card's when its card has the same GPU name and SM count (checks.same_card). A
file that cannot be read, or of another format, serves nothing, with one warning naming it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Mapping

from kselect.selector.model.checks import same_card
from kselect.selector.warn import warn_once

FORMAT = "kselect-measured-picks/1"
INDUCTOR_FORM_SUFFIX = ".lookup.json"  # the same picks in Inductor's lookup-table form, beside


def picks_dir() -> Path:
    from kselect.models import MODELS_DIR

    return MODELS_DIR / "picks"


def _read(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT or not isinstance(doc.get("picks"), dict):
            raise ValueError(f"not a {FORMAT} table")
        return doc
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        warn_once(f"measured-picks:{path}", f"kselect: measured picks {path} cannot be read ({exc}): not used")
        return None


def card_picks(fingerprint: Mapping, directory: str | Path | None = None) -> dict[str, str]:
    """{problem key: candidate key} of the tables of this card in `directory` (default the
    shipped models/picks/); empty when none is this card's. Tables read first win a problem."""
    directory = Path(directory) if directory is not None else picks_dir()
    if not directory.is_dir():
        return {}
    picks: dict[str, str] = {}
    for path in sorted(directory.glob("*.json")):
        if path.name.endswith(INDUCTOR_FORM_SUFFIX):
            continue
        doc = _read(path)
        if doc is None or not same_card(doc.get("card") or {}, fingerprint):
            continue
        for problem_key, entry in doc["picks"].items():
            if isinstance(entry, Mapping) and isinstance(entry.get("pick"), str):
                picks.setdefault(str(problem_key), entry["pick"])
    return picks


def table_digest(picks: Mapping[str, str]) -> str:
    """A short digest of a card's picks ("" for none): a decision taken with them keys on it, so
    a new table is not served a decision cached under the old one."""
    if not picks:
        return ""
    return hashlib.sha256(json.dumps(sorted(picks.items())).encode()).hexdigest()[:16]
