"""Where each process's compile seconds went, per op and arm, from the check's records: Inductor's
precompilation of the choices, its benchmarking of them, and the rest (lowering, code generation,
kselect's gate), beside the card's SM clock and temperature, and each arm held against its own
repeat's stock process. The records of repeat 0 predate the split (no precompile/benchmark
fields) and give the compile alone. Side-by-side records (side-by-side-R: every op under the
three arms in one process, the worker's `--arms`) get a table of their own: each arm against
the stock compile of its own process.

    python reports/2026-12-07-never-widen-h100/split.py [RECORDS_DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ARMS = ("stock", "verify", "predict")
ORDER = {0: ARMS, 1: ("verify", "predict", "stock"), 2: ("predict", "stock", "verify")}


def load(records: Path) -> dict:
    """{folder name: record} of every record under `records`."""
    return {d.name: json.loads((d / "result.json").read_text()) for d in sorted(records.iterdir()) if d.is_dir()}


def one_arm(recs: dict) -> dict:
    return {name: r for name, r in recs.items() if not name.startswith("side-by-side-")}


def side_by_side_table(recs: dict) -> list[str]:
    """Each arm's compile against the stock compile of the same process, per op and repeat."""
    runs = {int(name.rsplit("-", 1)[1]): r for name, r in recs.items() if name.startswith("side-by-side-")}
    if not runs:
        return []
    lines = [
        "| op | repeat | order | arm | compile s | precompile s | benchmark s | rest s | / stock, same process |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    ratios: dict = {}
    for op in next(iter(runs.values()))["ops"]:
        for r, run in sorted(runs.items()):
            row = run["ops"][op]
            for arm in row["order"]:
                o = row[arm]
                pre, bench = o.get("precompile_s"), o.get("benchmark_s")
                rest = None if pre is None or bench is None else o["compile_s"] - pre - bench
                ratio = o["compile_s"] / row["stock"]["compile_s"]
                if arm != "stock":
                    ratios.setdefault((op, arm), []).append(ratio)
                order = ", ".join(a[0].upper() for a in row["order"])
                lines.append(
                    f"| {op} | {r} | {order} | {arm} | {o['compile_s']:.1f} | {_f(pre)} | {_f(bench)} | {_f(rest)} "
                    f"| {'' if arm == 'stock' else f'{ratio:.2f}'} |"
                )
    lines += ["", "| op | arm | median of the same-process ratios | the ratios |", "| --- | --- | --- | --- |"]
    for (op, arm), got in ratios.items():
        lines.append(f"| {op} | {arm} | {statistics.median(got):.2f} | {', '.join(f'{x:.2f}' for x in got)} |")
    return lines


def _f(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def table(recs: dict) -> list[str]:
    reps = sorted({int(name.rsplit("-", 1)[1]) for name in recs})
    ops = [op for op in recs[f"stock-{reps[0]}"]["ops"] if op != "bf16_mm"]
    lines = [
        "| op | repeat (order) | arm | compile s | precompile s | benchmark s | rest s | SM MHz, C before | / own stock |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    ratios: dict = {}
    for op in ops:
        for r in reps:
            stock = recs[f"stock-{r}"]["ops"][op]["compile_s"]
            for arm in ORDER[r % 3]:
                o = recs[f"{arm}-{r}"]["ops"][op]
                pre, bench = o.get("precompile_s"), o.get("benchmark_s")
                rest = None if pre is None else o["compile_s"] - pre - bench
                gpu = o.get("gpu_before") or {}
                state = f"{gpu['sm_clock_mhz']}, {gpu['temperature_c']}" if gpu else "-"
                ratio = o["compile_s"] / stock
                if arm != "stock":
                    ratios.setdefault((op, arm), []).append(ratio)
                order = ", ".join(a[0].upper() for a in ORDER[r % 3])
                lines.append(
                    f"| {op} | {r} ({order}) | {arm} | {o['compile_s']:.1f} | {_f(pre)} | {_f(bench)} | {_f(rest)} "
                    f"| {state} | {'' if arm == 'stock' else f'{ratio:.2f}'} |"
                )
    lines += [
        "",
        "| op | arm | median compile / stock's median | median of the per-repeat ratios | stock's spread (max/min) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for op in ops:
        stock = [recs[f"stock-{r}"]["ops"][op]["compile_s"] for r in reps]
        for arm in ARMS[1:]:
            mine = [recs[f"{arm}-{r}"]["ops"][op]["compile_s"] for r in reps]
            lines.append(
                f"| {op} | {arm} | {statistics.median(mine) / statistics.median(stock):.2f} "
                f"| {statistics.median(ratios[(op, arm)]):.2f} | {max(stock) / min(stock):.2f} |"
            )
    return lines


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "check" / "records"
    recs = load(where)
    print("\n".join(table(one_arm(recs)) + [""] + side_by_side_table(recs)))
