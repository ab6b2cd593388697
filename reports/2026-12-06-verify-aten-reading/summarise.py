"""The diagnosis call's table: ATen's time read every way, against the compiled function's.

Usage: python summarise.py call1-diagnose/rows.jsonl > call1-diagnose/table.md
"""

from __future__ import annotations

import json
import statistics
import sys


def main(path: str) -> int:
    rows = [json.loads(line) for line in open(path)]
    cols = ("collector", "inductor_ops", "primary", "again", "reversed", "after_idle")
    print("| shape | compiled (ms) | " + " | ".join(cols) + " | same cuBLAS kernel | verify's pick |")
    print("| --- | --- |" + " --- |" * len(cols) + " --- | --- |")
    ratios: dict[str, list[float]] = {c: [] for c in cols}
    for r in rows:
        c = r["compiled"]
        aten = next(v for rd in r["verify_reads"] for k, v in rd["choices"].items() if k.startswith("aten"))
        got = {"collector": r["collector"], "inductor_ops": r["inductor_ops"], **aten}
        for k in cols:
            ratios[k].append(got[k] / c)
        same = set(aten["kernels"]) == set(r["compiled_kernels"]) == set(r["collector_kernels"])
        cells = " | ".join(f"{got[k] / c:.3f}" for k in cols)
        print(
            f"| {r['problem'].split(':')[1]} | {c:.4f} | {cells} | {'yes' if same else 'no'} | {r['verify_chosen']} |"
        )
    med = " | ".join(f"**{statistics.median(ratios[k]):.3f}**" for k in cols)
    worst = " | ".join(f"{max(ratios[k]):.3f}" for k in cols)
    print(f"| median | | {med} | | |")
    print(f"| worst | | {worst} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
