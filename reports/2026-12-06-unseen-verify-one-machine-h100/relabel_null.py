"""How many GEMMs the noise rule calls "slower than plain" when nothing differs: for every GEMM where
verify kept ATen's mm in each process (so it ran plain's cuBLAS call), the six processes' times
are relabelled in all 20 ways into three "plain" and three "verify" processes and the rule is
applied to each (noise = max/min of the three "plain", floored at the run's median noise; ratio =
median "verify" / mean "plain"). Prints the expected count under that null and the chance of at
least the observed count (Monte Carlo over one relabelling per GEMM).

Usage: python relabel_null.py run/results.jsonl
"""

from __future__ import annotations

import collections
import itertools
import json
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
