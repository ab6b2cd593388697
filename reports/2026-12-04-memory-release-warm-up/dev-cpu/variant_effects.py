"""How much slower is each variant's 8-layer prefill step than predict's, on one host?

Least squares over every 8-layer prefill process from reports/2026-12-03-8-layers-all-workloads-kernel-time
to this report (batch 8, seq 1024, bf16, H200), with one indicator per run (its host and round structure)
and one per variant; kselect-predict is the baseline. Verify's processes are split by what
they did with their measurement's memory: kept (before the
`release_memory` of this report's code) or released. The runs with `--warmup-s 10` are fitted apart (a different
timing). A run that holds a variant only once still informs the others through its run term.

Run from the repo root: .venv/bin/python reports/2026-12-04-memory-release-warm-up/dev-cpu/variant_effects.py
"""
import json
from pathlib import Path

import numpy as np

FILES = ["reports/2026-12-03-8-layers-all-workloads-kernel-time/call1/p/prefill8", "reports/2026-12-03-8-layers-all-workloads-kernel-time/call3/k/prefill8",
         "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call1/x/prefill8", "reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call1/p/prefill8",
         "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call2/b/prefill8", "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call4/d/prefill8",
         "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call1/a/prefill8", "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call4/d/prefill8vp",
         "reports/2026-12-04-prefill-gap-process-not-tile/call1/a/prefill8vp", "reports/2026-12-04-prefill-gap-process-not-tile/call2/b/prefill8m0",
         "reports/2026-12-04-prefill-gap-process-not-tile/call4/d/prefill8m0b", "reports/2026-12-04-memory-release-warm-up/call1/d/prefill8mem",
         "reports/2026-12-04-memory-release-warm-up/call3/d/prefill8target"]
WARM_FILES = ["reports/2026-12-04-memory-release-warm-up/call2/d/prefill8warm"]
BASELINE = "kselect-predict"


def label(run: dict) -> str:
    """The variant, with verify split by whether its measurement's memory was released."""
    v = run["variant"]
    if v == "kselect-verify":
        return "kselect-verify (released)" if (run.get("kselect") or {}).get("release_memory") else "kselect-verify (kept)"
    return v


def processes(files):
    rows = []
    for i, f in enumerate(files):
        report = json.loads((Path(f) / "results.json").read_text())
        for r in report["runs"]:
            if r.get("status") == "ok" and r.get("workload") == "prefill" and r.get("graph_step_ms") is not None:
                rows.append({"run": i, "variant": label(r), "gpu": r["graph_step_ms"], "step": r["step_ms"]})
    return rows


def fit(rows, outcome, runs):
    variants = sorted({r["variant"] for r in rows} - {BASELINE})
    X = np.array([[float(r["run"] == i) for i in range(runs)] + [float(r["variant"] == v) for v in variants]
                  for r in rows])
    y = np.array([r[outcome] for r in rows])
    beta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = resid @ resid / (len(y) - rank) * np.linalg.pinv(X.T @ X)
    counts = {v: sum(r["variant"] == v for r in rows) for v in variants}
    return [(v, counts[v], float(beta[runs + j]), float(np.sqrt(cov[runs + j, runs + j])))
            for j, v in enumerate(variants)]


def show(title, rows, runs):
    base = sum(r["variant"] == BASELINE for r in rows)
    print(f"{title}: {len(rows)} processes in {runs} runs, {base} of them {BASELINE}")
    for outcome, what in (("gpu", "GPU-only step"), ("step", "eager step")):
        print(f"  {what}, ms over {BASELINE} (coefficient +- standard error, t):")
        for v, n, b, se in fit(rows, outcome, runs):
            print(f"    {v:<28s} {n:3d} processes  {b:+.3f} +- {se:.3f}  t = {b / se:+.1f}")


if __name__ == "__main__":
    show("warm-up 0 s", processes(FILES), len(FILES))
    show("warm-up 10 s", processes(WARM_FILES), len(WARM_FILES))
