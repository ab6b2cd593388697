"""The rule fixed before the call (reports/device/history.md, "A2"): which ATen probe reader ships.

Prints `graph`, `profiler` or `none`, and why on stderr.
Usage: python pick_reader.py FACTS_DIR GAP_DIR
"""

import json
import statistics
import sys
from pathlib import Path


def gap(rows: list[dict], arm: str) -> float | None:
    """Median after/before of plain's kernel time over the shapes with M <= 128 in `arm`."""
    by: dict[str, dict[str, float]] = {}
    for r in rows:
        if r.get("arm") == arm and "kernel_ms" in r and r.get("M", 1 << 30) <= 128:
            by.setdefault(r["problem"], {})[r["step"]] = r["kernel_ms"]
    ratios = [s["after"] / s["before"] for s in by.values() if "after" in s and "before" in s]
    return statistics.median(ratios) if ratios else None


def main(facts_dir: str, gap_dir: str) -> str:
    facts = [json.loads(line) for line in open(Path(facts_dir) / "rows.jsonl")]
    rows = [json.loads(line) for line in open(Path(gap_dir) / "rows.jsonl")]
    agree = bool(facts) and all(r["agree"] for r in facts)
    g, p = gap(rows, "probe_graph"), gap(rows, "probe_profiler")
    print(
        f"facts equal on {sum(r['agree'] for r in facts)} of {len(facts)}; gap graph {g}, profiler {p}", file=sys.stderr
    )
    if agree and g is not None and g <= 1.01:
        return "graph"
    if p is not None and p <= 1.01:
        return "profiler"
    return "none"


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
