"""A dataset's record of what ATen launches for each of its problems (`aten_kernels.jsonl`).

One JSON line per problem: {"key", "kernels" (names over the probe's calls), "per_call",
"card"} -- written on the GPU by `kselect dataset probe-aten DIR`, read by training, which
turns each record into the cost model's ATen-kernel columns (kernels/aten/launched.py) on every
row of that problem. A problem without a record keeps the columns missing (NaN), as the selector
does where it cannot probe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from kselect.kernels.aten.launched import ATEN_KERNEL_COLUMNS, record_facts
from kselect.selector.atomic_write import write_text

FILE_NAME = "aten_kernels.jsonl"


class AtenKernelsError(ValueError):
    """An aten_kernels.jsonl that cannot be read; the message names the file and line."""


def path_of(data: str | Path) -> Path:
    return Path(data) / FILE_NAME


def read_records(data: str | Path) -> dict[str, dict]:
    """problem key -> probe record ({} when the dataset has no such file)."""
    path = path_of(data)
    if not path.exists():
        return {}
    records = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            key, kernels, per_call = rec["key"], rec["kernels"], float(rec["per_call"])
        except (ValueError, KeyError, TypeError) as exc:
            raise AtenKernelsError(f"{path}:{n}: not a probe record ({exc})") from None
        if not isinstance(kernels, list) or not kernels or per_call <= 0:
            raise AtenKernelsError(f"{path}:{n}: {key} has no kernel names or no launches per call")
        records[key] = rec
    return records


def write_records(data: str | Path, records: Iterable[dict]) -> Path:
    """All records, one per line, sorted by key, replacing the file atomically."""
    lines = [json.dumps(r, sort_keys=True) for r in sorted(records, key=lambda r: r["key"])]
    path = path_of(data)
    write_text(path, "\n".join(lines) + "\n")
    return path


def attach(df: pd.DataFrame, records: dict[str, dict]) -> pd.DataFrame:
    """`df` with ATEN_KERNEL_COLUMNS filled per problem from `records` (NaN where none)."""
    if not records:
        return df
    from kselect.training.data.dataset import row_problem

    first = df.drop_duplicates("problem_key")
    facts = {}
    for _, row in first.iterrows():
        rec = records.get(row["problem_key"])
        if rec is not None:
            facts[row["problem_key"]] = record_facts(rec, row_problem(row))
    table = pd.DataFrame.from_dict(facts, orient="index", columns=list(ATEN_KERNEL_COLUMNS))
    out = df.drop(columns=[c for c in ATEN_KERNEL_COLUMNS if c in df.columns])
    joined = table.reindex(out["problem_key"].to_numpy())
    for c in ATEN_KERNEL_COLUMNS:
        out[c] = joined[c].to_numpy(dtype=np.float64)
    return out


def probe_dataset(data: str | Path, say: Callable[[str], None] = print, missing_only: bool = False) -> dict:
    """Probe each problem of the dataset in `data` on this CUDA device (with `missing_only`,
    those without a record) and merge into DIR/aten_kernels.jsonl, each record naming the card.
    Returns counts; a problem that cannot be probed is reported, not fatal."""
    import torch

    from kselect.kernels.aten.launched import ProbeError, probe, probe_possible
    from kselect.training.data.dataset import load_dataset, row_problem

    why = probe_possible()
    if why:
        raise ProbeError(f"cannot probe ATen's kernels here: {why}")
    card = torch.cuda.get_device_name()
    have = read_records(data)
    rows = load_dataset(data).drop_duplicates("problem_key")
    problems = [row_problem(r) for _, r in rows.iterrows() if not (missing_only and r["problem_key"] in have)]
    records = have
    done = failed = 0
    for problem in problems:
        try:
            rec = probe(problem)
        except (ProbeError, RuntimeError) as exc:
            failed += 1
            say(f"  {problem.key}: not probed ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        records[problem.key] = {"key": problem.key, "card": card, **rec}
        done += 1
    write_records(data, records.values())
    return {"probed": done, "failed": failed, "records": len(records), "file": str(path_of(data))}
