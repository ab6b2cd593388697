"""Verify's kernels (reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun, one process) against each of stock DEFAULT's three
processes on the 30 bench shapes, and against their per-shape median: geomean kernel-time ratios,
over all 30 shapes and over the 26 that DEFAULT autotunes (benchmarked > 0).

    python reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/dev-cpu/default_processes.py
"""
import json
import math
import statistics


def rows(path):
    return [json.loads(line) for line in open(path)]


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


s13 = rows("reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call3/z/gemm30/results.jsonl")
defaults = {"s13": [r for r in s13 if r["variant"] == "default"],
            "s14 callB": rows("reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/callB/b/default30/results.jsonl"),
            "s14 callC": rows("reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/callC/c/default30/results.jsonl")}
verify = {r["problem"]: r["kernel_ms"] for r in s13 if r["variant"] == "kselect-verify" and r.get("kernel_ms")}
plain = {r["problem"]: r["kernel_ms"] for r in s13 if r["variant"] == "plain" and r.get("kernel_ms")}
per_shape = {}
for name, rs in defaults.items():
    d = {r["problem"]: r["kernel_ms"] for r in rs if r.get("kernel_ms")}
    decided = {r["problem"] for r in rs if r.get("benchmarked", 0) > 0}
    for p, ms in d.items():
        per_shape.setdefault(p, []).append((ms, p in decided))
    shapes = sorted(set(d) & set(verify))
    print(f"DEFAULT {name}: {len(shapes)} shapes, verify/DEFAULT {geomean([verify[p] / d[p] for p in shapes]):.4f}, "
          f"plain/DEFAULT {geomean([plain[p] / d[p] for p in shapes]):.4f}")
median = {p: statistics.median(ms for ms, _ in v) for p, v in per_shape.items()}
decided = [p for p, v in per_shape.items() if any(dec for _, dec in v)]
for label, shapes in (("all", sorted(set(median) & set(verify))), ("autotuned", sorted(set(decided) & set(verify)))):
    print(f"median of DEFAULT's processes, {label} {len(shapes)} shapes: verify/DEFAULT "
          f"{geomean([verify[p] / median[p] for p in shapes]):.4f}, verify/plain "
          f"{geomean([verify[p] / plain[p] for p in shapes]):.4f}, plain/DEFAULT "
          f"{geomean([plain[p] / median[p] for p in shapes]):.4f}")
