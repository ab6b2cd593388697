"""Each GEMM of the pooled unseen run against plain torch.compile, by the rule fixed before it.

The rule (reports/device/history.md, the 2026-12-06 plan): a GEMM's noise is max/min of plain's
processes, floored at plain's median noise over the set; each variant's median over its
processes against the mean of plain's; inside the noise is a tie. The kernel each variant ran
(its `chosen`) is listed beside every GEMM slower than plain beyond the noise.

Usage: python noise_rule.py pooled/results.jsonl > noise-rule.md
"""

from __future__ import annotations

import collections
import json
import statistics
import sys

VARIANTS = ("kselect-verify", "kselect-predict", "default")


def main(path: str) -> int:
    times: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    chosen: dict = collections.defaultdict(lambda: collections.defaultdict(set))
    for line in open(path):
        r = json.loads(line)
        if r.get("kernel_ms") is None:
            continue
        times[r["problem"]][r["variant"]].append(r["kernel_ms"])
        chosen[r["problem"]][r["variant"]].add(r.get("chosen") or "")
    floor = statistics.median(max(v["plain"]) / min(v["plain"]) for v in times.values())
    print(f"Plain's median process-to-process noise (max/min over its processes): {floor:.4f}.\n")
    print("| variant | GEMMs | time / plain's, geomean (< 1: faster) | slower beyond noise | of which kept ATen | faster | ties |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    slow_rows = []
    for var in VARIANTS:
        ratios, slow, fast, tie, slow_aten = [], 0, 0, 0, 0
        for key, v in times.items():
            if var not in v:
                continue
            noise = max(max(v["plain"]) / min(v["plain"]), floor)
            ratio = statistics.median(v[var]) / statistics.mean(v["plain"])
            ratios.append(ratio)
            if ratio > noise:
                slow += 1
                aten = all(c.startswith("aten:") for c in chosen[key][var])
                slow_aten += aten
                slow_rows.append((var, key, ratio, noise, ", ".join(sorted(chosen[key][var]))))
            elif ratio < 1 / noise:
                fast += 1
            else:
                tie += 1
        if not ratios:  # a variant this run did not have
            continue
        geo = statistics.geometric_mean(ratios)
        print(f"| {var} | {len(ratios)} | {geo:.4f} | {slow} | {slow_aten} | {fast} | {tie} |")
    print("\n| variant | GEMM | ratio to plain | noise | kernel it ran |")
    print("| --- | --- | --- | --- | --- |")
    for var, key, ratio, noise, ch in slow_rows:
        print(f"| {var} | {key.split(':')[1]} | {ratio:.3f} | {noise:.3f} | {ch} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
