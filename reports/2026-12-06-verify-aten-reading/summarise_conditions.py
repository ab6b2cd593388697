"""The conditions call's table and the rule fixed before it (reports/device/history.md).

For each condition: ATen's reading over the compiled function's kernel time (median, worst
over the shapes), and each kept template's reading over its own `alone` read (median). The rule:
verify ships the cheapest condition (gentle, gentle_idle1, idle300, in that order) whose ATen
reading is within 3 % of the compiled function's in the median and 6 % worst, and whose template
readings are within 3 % of their `alone` reads in the median.

Usage: python summarise_conditions.py call2-conditions/rows.jsonl > call2-conditions/table.md
"""

from __future__ import annotations

import json
import statistics
import sys

ORDER = ("heavy", "gentle", "gentle_idle1", "idle300")
CHEAPEST_FIRST = ("gentle", "gentle_idle1", "idle300")


def main(path: str) -> int:
    rows = [json.loads(line) for line in open(path)]
    aten: dict[str, list[float]] = {c: [] for c in ("verify", "alone", *ORDER)}
    tmpl: dict[str, list[float]] = {c: [] for c in ("verify", *ORDER)}
    print("| shape | compiled (ms) | verify as shipped | alone | " + " | ".join(ORDER) + " | verify's pick |")
    print("| --- | --- | --- | --- |" + " --- |" * len(ORDER) + " --- |")
    for r in rows:
        c = r["compiled"]
        rd = r["reads"][-1]
        i = next(j for j, n in enumerate(rd["names"]) if n.startswith("aten"))
        got = {"verify": rd["verify"][i], "alone": rd["alone"][i]} | {k: v[i] for k, v in rd["conditions"].items()}
        for k in aten:
            aten[k].append(got[k] / c)
        for j, name in enumerate(rd["names"]):
            if j == i or not (rd["alone"][j] < float("inf")):
                continue
            tmpl["verify"].append(rd["verify"][j] / rd["alone"][j])
            for k in ORDER:
                tmpl[k].append(rd["conditions"][k][j] / rd["alone"][j])
        cells = " | ".join(f"{got[k] / c:.3f}" for k in ("verify", "alone", *ORDER))
        print(f"| {r['problem'].split(':')[1]} | {c:.4f} | {cells} | {r['verify_chosen']} |")
    print()
    print("| condition | ATen / compiled, median | worst | templates / alone, median | rule met |")
    print("| --- | --- | --- | --- | --- |")
    met = {}
    for k in ("verify", "alone", *ORDER):
        a = aten[k]
        worst = max(a, key=lambda x: abs(x - 1))
        t = statistics.median(tmpl[k]) if k in tmpl else float("nan")
        ok = abs(statistics.median(a) - 1) <= 0.03 and abs(worst - 1) <= 0.06 and (k not in tmpl or abs(t - 1) <= 0.03)
        met[k] = ok
        print(f"| {k} | {statistics.median(a):.3f} | {worst:.3f} | {t:.3f} | {'yes' if ok else 'no'} |")
    ships = next((k for k in CHEAPEST_FIRST if met[k]), None)
    print()
    print(f"By the rule: {ships or 'none meets it'} ships ({len(rows)} shapes).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
