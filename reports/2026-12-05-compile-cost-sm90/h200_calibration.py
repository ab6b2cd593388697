"""The compile-cost model (fitted on this CPU's compiles of our kernel) against what verify's
compiles of Inductor's own templates took on the H200's host, per template, in every
per-template compile record the device has returned (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait: the one-layer
decode and 8-layer prefill runs, and the GPU tests' verify measurements).

Run from the repository root (seconds):
    .venv/bin/python reports/2026-12-05-compile-cost-sm90/h200_calibration.py reports/2026-12-05-compile-cost-sm90/h200-calibration.json
"""
import json
import sys
from collections import defaultdict

import numpy as np
from scipy.stats import spearmanr

from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.compile_time_model import shipped_compile_cost

SOURCES = ("reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/call1/d/decode1/results.json",
           "reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/call2/d/prefill8target/results.json",
           "reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/call1/d/gpu_report.json")


def records(obj):
    """Every measurement record with a per-template compile record, once per run."""
    if isinstance(obj, dict):
        if isinstance(obj.get("compiles"), dict) and "problem" in obj:
            yield obj
            return
        for key, value in obj.items():
            if key != "combined":      # results.json repeats its first runs there
                yield from records(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from records(value)


def problem_of(key: str) -> Problem:
    op, size, dtype, layout = key.split(":")
    m, n, k = (int(x) for x in size.split("x"))
    return Problem(m, n, k, dtype, layout)


model = shipped_compile_cost("sm_90")
walls, cpus, spans, predicted = defaultdict(list), defaultdict(list), [], {}
for path in SOURCES:
    for rec in records(json.load(open(path))):
        problem = problem_of(rec["problem"])
        space = {c.key: c for c in triton_space(problem, "exhaustive")}
        per = rec["compiles"]["per_choice"]
        pred = {key: float(model.predict_for(problem, [space[key]])[0]) for key in per}
        for key, c in per.items():
            walls[(rec["problem"], key)].append(c["wall_ms"])
            cpus[(rec["problem"], key)].append(c["cpu_ms"])
            predicted[(rec["problem"], key)] = pred[key]
        slowest_pred = max(pred, key=pred.get)
        slowest_wall = max(per, key=lambda k: per[k]["wall_ms"])
        spans.append({"source": path, "problem": rec["problem"], "templates": len(per),
                      "span_ms": rec["compiles"]["span_ms"], "slowest": slowest_wall,
                      "predicted_slowest": slowest_pred, "agree": slowest_pred == slowest_wall})
rows = []
for key in sorted(walls, key=lambda k: predicted[k]):
    rows.append({"problem": key[0], "template": key[1], "processes": len(walls[key]),
                 "h200_wall_ms_median": float(np.median(walls[key])),
                 "h200_thread_cpu_ms_median": float(np.median(cpus[key])),
                 "predicted_dev_cpu_ms": round(predicted[key], 1)})
rho = spearmanr([r["predicted_dev_cpu_ms"] for r in rows], [r["h200_wall_ms_median"] for r in rows]).statistic
ratio = [r["h200_wall_ms_median"] / r["predicted_dev_cpu_ms"] for r in rows]
out = {"templates": rows, "spearman_predicted_vs_h200_wall": float(rho),
       "h200_wall_over_predicted": {"min": min(ratio), "median": float(np.median(ratio)), "max": max(ratio)},
       "sets": spans, "sets_with_two_or_more": sum(s["templates"] >= 2 for s in spans),
       "slowest_predicted_right": sum(s["agree"] for s in spans if s["templates"] >= 2)}
for r in rows:
    print(r)
print({k: v for k, v in out.items() if k not in ("templates", "sets")})
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/h200_calibration.json", "w"), indent=1)
