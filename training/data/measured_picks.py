"""A card's measured picks: for every GEMM a dataset measured on that card, the candidate that
ran fastest, kept only where it beat ATen beyond the measurement's noise -- a table predict mode
can serve with zero benchmarks, the pick measured rather than predicted. GEMMs no dataset holds
come from verify's decisions in bench runs on the card (training/bench/verified_picks.py).

Per problem (a dataset's ok, not-noisy rows; the labels training learns, re-timed as Inductor's
kernels where the dataset holds such rows):
- the fastest candidate that is not ATen is the pick when ATen's time exceeds it by more than
  max(MIN_GAIN, the two rows' spreads): a gain the collector could misread stays ATen's;
- otherwise ATen is the pick: a GEMM where the card's measurements say cuBLAS holds is a hit too
  (predict then keeps cuBLAS and benchmarks nothing, as plain does).
A problem without an ATen row has no reference and is left out.

The table is written in two forms: kselect's own (problem key -> pick, its time, ATen's, the
gain, the dataset it came from), which the selector reads (selector/model/measured_picks.py), and Inductor's lookup-table form
(training/data/lookup_table.py) for a user who installs Inductor's own LookupTableChoices. TF32
and fp32 share Inductor's key (`torch.float32`: the key does not carry the TF32 setting), so
their picks go only to kselect's form.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kselect.kernels.problem import Problem
from kselect.selector.model.measured_picks import FORMAT

MIN_GAIN = 0.03  # a template replaces ATen only when it is this much faster, or more than the spreads
# the fingerprint fields a table keeps, to name its card (selector/model/discovery.py's matching fields)
CARD_FIELDS = ("gpu_name", "compute_capability", "sm_count", "gcn_arch", "total_memory_bytes")
INDUCTOR_DTYPES = ("bf16", "fp16")  # dtypes Inductor's lookup key tells apart


@dataclass(frozen=True)
class MeasuredPick:
    problem: Problem
    pick: str  # candidate key
    pick_ms: float
    aten: str  # ATen's candidate key
    aten_ms: float
    gain: float  # aten_ms / pick_ms - 1 (0 where ATen is the pick)
    source: str  # the dataset directory it came from

    @property
    def problem_key(self) -> str:
        return self.problem.key

    def entry(self) -> dict:
        """kselect's table entry: the pick and what it was measured against."""
        return {k: v for k, v in asdict(self).items() if k != "problem"}


def _spread(value) -> float:
    return float(value) if value is not None and math.isfinite(float(value)) else 0.0


def best_of_space(df: pd.DataFrame, source: str = "", min_gain: float = MIN_GAIN) -> list[MeasuredPick]:
    """One MeasuredPick per problem of `df` (dataset rows) that has a measured ATen row."""
    ok = df[(df["status"] == "ok") & (df["time_ms"] > 0) & ~df["noisy"].fillna(False).astype(bool)]
    picks = []
    for _, rows in ok.groupby("problem_key", sort=True):
        aten_rows = rows[rows["backend"] == "aten"]
        if aten_rows.empty:
            continue
        aten = aten_rows.loc[aten_rows["time_ms"].idxmin()]
        others = rows[rows["backend"] != "aten"]
        pick = aten
        if not others.empty:
            best = others.loc[others["time_ms"].idxmin()]
            need = max(min_gain, _spread(best["spread"]) + _spread(aten["spread"]))
            if aten["time_ms"] / best["time_ms"] - 1 > need:
                pick = best
        picks.append(
            MeasuredPick(
                problem=Problem.from_dict(aten.to_dict()),
                pick=str(pick["candidate_key"]),
                pick_ms=float(pick["time_ms"]),
                aten=str(aten["candidate_key"]),
                aten_ms=float(aten["time_ms"]),
                gain=float(aten["time_ms"] / pick["time_ms"] - 1),
                source=source,
            )
        )
    return picks


def card_of(fingerprint: dict) -> dict:
    """The fields of a dataset's fingerprint that name its card."""
    return {k: fingerprint[k] for k in CARD_FIELDS if fingerprint.get(k) is not None}


def merge(tables: list[tuple[dict, list[MeasuredPick]]]) -> tuple[dict, list[MeasuredPick]]:
    """One card's picks from several datasets ((card, picks) each): the cards must be one; a
    problem measured in two datasets keeps the first dataset's pick."""
    cards = {json.dumps(card, sort_keys=True) for card, _ in tables}
    if len(cards) != 1:
        raise ValueError(f"the datasets were measured on different cards: {sorted(cards)}")
    seen, merged = set(), []
    for _, picks in tables:
        for p in picks:
            if p.problem_key not in seen:
                seen.add(p.problem_key)
                merged.append(p)
    return tables[0][0], merged


def with_bench(card: dict, picks: list[MeasuredPick], bench: tuple[str, list[MeasuredPick]]) -> list[MeasuredPick]:
    """`picks` (the datasets') and, for the GEMMs no dataset holds, the bench runs' picks
    (training/bench/verified_picks.py: (their GPU's name, picks)). A dataset measured every
    candidate; a bench run only those verify kept, so a GEMM in both keeps the dataset's pick."""
    device, extra = bench
    if device != card.get("gpu_name"):
        raise ValueError(f"the bench runs measured on {device!r}, the datasets on {card.get('gpu_name')!r}")
    held = {p.problem_key for p in picks}
    return picks + [p for p in extra if p.problem_key not in held]


def table_document(card: dict, picks: list[MeasuredPick], min_gain: float = MIN_GAIN) -> dict:
    """kselect's form of the table, as written to disk."""
    return {
        "format": FORMAT,
        "card": card,
        "rule": {
            "min_gain": min_gain,
            "pick": "the fastest non-ATen candidate when ATen is slower by more than max(min_gain, "
            "both spreads); else ATen",
            "bench pick": "a GEMM no dataset holds, from bench runs on the card: the candidate verify chose "
            "in every process, when it beat plain's cuBLAS beyond the GEMM's noise and by more than "
            "min_gain; else ATen",
        },
        "sources": sorted({p.source for p in picks}),
        "picks": {p.problem_key: p.entry() for p in sorted(picks, key=lambda p: p.problem_key)},
    }


def inductor_export(picks: list[MeasuredPick], device_key: str | None = None):
    """The picks Inductor's lookup table can carry (plain mm/bmm in bf16 or fp16), as an Export."""
    from kselect.selector.compat import lookup_table as inductor_lookup_table
    from kselect.training.data.lookup_table import Export, add_entry, problem_inputs, require_lookup_tables

    require_lookup_tables()
    out = Export(source="measured picks")
    uids = inductor_lookup_table.lookup_template_uids()
    for p in picks:
        problem = p.problem
        if problem.dtype not in INDUCTOR_DTYPES:
            out.skipped[f"{problem.dtype}: Inductor's key does not tell it apart"] += 1
            continue
        if problem.op not in ("mm", "bmm"):
            out.skipped[f"{problem.op}: its Inductor key names nodes a dataset row does not describe"] += 1
            continue
        add_entry(out, problem.op, problem_inputs(problem), [p.pick], uids, device_key)
    return out


def gain_summary(picks: list[MeasuredPick]) -> dict:
    """How many picks, how many not ATen, and their median gain over ATen."""
    templates = [p.gain for p in picks if p.pick != p.aten]
    return {
        "problems": len(picks),
        "template_picks": len(templates),
        "median_template_gain": round(float(np.median(templates)), 4) if templates else None,
    }


def dataset_picks(data, min_gain: float = MIN_GAIN) -> tuple[dict, list[MeasuredPick]]:
    """(card, picks) of one dataset directory: its rows with the re-timed labels folded in where
    it holds them (as training reads them)."""
    from kselect.training.data.dataset import RETIMED_DIR, DatasetDir, load_dataset
    from kselect.training.data.labels import apply_retimed

    ds = DatasetDir(Path(data))
    if not ds.fingerprint_path.exists():
        raise FileNotFoundError(f"{data} has no fingerprint.json: its card is unknown")
    df = load_dataset(data)
    retimed = DatasetDir(Path(data) / RETIMED_DIR)
    if retimed.exists():
        df = apply_retimed(df, retimed.load())
    return card_of(ds.read_fingerprint()), best_of_space(df, source=str(data), min_gain=min_gain)


def write_tables(
    data_dirs,
    out_stem,
    min_gain: float = MIN_GAIN,
    device_key: str | None = None,
    bench: tuple[str, list[MeasuredPick]] | None = None,
) -> dict:
    """One card's measured picks from `data_dirs` (and `bench`, verify's decisions from bench
    runs on that card: with_bench), written as `<out_stem>.json` (kselect's form) and
    `<out_stem>.lookup.json` (Inductor's); returns a summary."""
    from kselect.selector.atomic_write import write_text
    from kselect.training.data.lookup_table import write_table

    card, picks = merge([dataset_picks(d, min_gain) for d in data_dirs])
    from_datasets = len(picks)
    if bench is not None:
        picks = with_bench(card, picks, bench)
    out_stem = Path(out_stem).expanduser()
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    ours = out_stem.with_name(out_stem.name + ".json")
    write_text(ours, json.dumps(table_document(card, picks, min_gain), indent=1, sort_keys=True) + "\n")
    export = inductor_export(picks, device_key)
    theirs = write_table(export, out_stem.with_name(out_stem.name + ".lookup.json"))
    return {
        "card": card,
        **gain_summary(picks),
        "from_bench_runs": len(picks) - from_datasets,
        "inductor": export.summary(),
        "out": [str(ours), str(theirs)],
    }
