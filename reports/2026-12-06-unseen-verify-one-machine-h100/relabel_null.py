"""How many GEMMs the noise rule calls "slower than plain" when nothing differs: for every GEMM where
verify kept ATen's mm in each process (so it ran plain's cuBLAS call), the six processes' times
are relabelled in all 20 ways into three "plain" and three "verify" processes and the rule is
applied to each (noise = max/min of the three "plain", floored at the run's median noise; ratio =
median "verify" / mean "plain"). Prints the expected count under that null and the chance of at
least the observed count (Monte Carlo over one relabelling per GEMM).

Usage: python relabel_null.py run/results.jsonl
       python relabel_null.py --exact run/results.jsonl   (each GEMM's permutation p-value)
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import random
import statistics
import sys


def slower(plain, verify, floor) -> bool:
    noise = max(max(plain) / min(plain), floor)
    return statistics.median(verify) / statistics.mean(plain) > noise


def main(path: str, seed: int = 0, draws: int = 100_000) -> int:
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    chosen = collections.defaultdict(set)
    for line in open(path):
        r = json.loads(line)
        if r.get("kernel_ms") is None:
            continue
        times[r["problem"]][r["variant"]].append(r["kernel_ms"])
        if r["variant"] == "kselect-verify":
            chosen[r["problem"]].add(r.get("chosen") or "")
    floor = statistics.median(max(v["plain"]) / min(v["plain"]) for v in times.values())
    kept = [k for k, c in chosen.items() if c and all(x.startswith("aten:") for x in c)]
    observed = sum(slower(times[k]["plain"], times[k]["kselect-verify"], floor) for k in kept)
    per_gemm = []
    for k in kept:
        six = times[k]["plain"] + times[k]["kselect-verify"]
        splits = [
            slower([six[i] for i in idx], [six[i] for i in range(6) if i not in idx], floor)
            for idx in itertools.combinations(range(6), 3)
        ]
        per_gemm.append(sum(splits) / len(splits))
    rng = random.Random(seed)
    at_least = sum(sum(rng.random() < p for p in per_gemm) >= observed for _ in range(draws)) / draws
    print(f"GEMMs where verify kept ATen's mm in every process: {len(kept)}; floor {floor:.4f}")
    print(f"observed slower beyond noise among them: {observed}")
    print(f"expected under relabelling (no difference): {sum(per_gemm):.2f}")
    print(f"chance of >= {observed} under relabelling: {at_least:.3f}")
    return 0


def exact_p(plain, verify) -> float:
    """The share of all relabellings of the GEMM's processes into two groups of the same sizes
    whose ratio (median "verify" / mean "plain") is at least the observed one: a per-GEMM
    permutation p-value (1 / C(n, k) where the observed labelling is the most extreme)."""
    both, k = plain + verify, len(plain)
    observed = statistics.median(verify) / statistics.mean(plain)
    ratios = [
        statistics.median([both[i] for i in range(len(both)) if i not in idx]) / statistics.mean([both[i] for i in idx])
        for idx in itertools.combinations(range(len(both)), k)
    ]
    return sum(r >= observed for r in ratios) / len(ratios)


def exact(path: str) -> int:
    """Every GEMM's permutation p-value (the next call's rule: slower only at the smallest p)."""
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in open(path):
        r = json.loads(line)
        if r.get("kernel_ms") is not None:
            times[r["problem"]][r["variant"]].append(r["kernel_ms"])
    print("| GEMM | processes (plain, verify) | ratio | p | most extreme |")
    print("| --- | --- | --- | --- | --- |")
    for key, v in sorted(times.items()):
        plain, verify = v["plain"], v["kselect-verify"]
        if not plain or not verify:
            continue
        p = exact_p(plain, verify)
        smallest = 1 / math.comb(len(plain) + len(verify), len(plain))
        ratio = statistics.median(verify) / statistics.mean(plain)
        print(f"| {key.split(':')[1]} | {len(plain)}, {len(verify)} | {ratio:.3f} | {p:.4f} | {p <= smallest} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--exact":
        sys.exit(exact(sys.argv[2]))
    sys.exit(main(sys.argv[1]))
