"""8-layer prefill, verify vs DEFAULT: each same-run, same-round pair of processes side by side.

Run from the repo root: python reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/dev-cpu/prefill_pairs.py
Reads the bench e2e results.json of every prefill run that had both variants.
"""
import json
import statistics
from pathlib import Path

RUNS = ["reports/2026-12-03-8-layers-all-workloads-kernel-time/call1/p/prefill8", "reports/2026-12-03-8-layers-all-workloads-kernel-time/call3/k/prefill8",
        "reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call1/x/prefill8", "reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call1/p/prefill8"]

diffs = {"step_ms": [], "graph_step_ms": [], "gemm": [], "total": []}
print(f"{'run':<34} {'round':>5} {'step D':>8} {'step V':>8} {'graph D':>8} {'graph V':>8} "
      f"{'gemm D':>7} {'gemm V':>7} {'kern D':>7} {'kern V':>7}")
for run in RUNS:
    rows = json.loads(Path(run, "results.json").read_text())["runs"]
    by = {(r["variant"], r.get("repeat", 0)): r for r in rows if r.get("status") == "ok"}
    for rep in sorted({k[1] for k in by}):
        d, v = by.get(("default", rep)), by.get(("kselect-verify", rep))
        if not (d and v):
            continue
        kd = (d.get("kernel_time") or {}).get("ms_per_step", {})
        kv = (v.get("kernel_time") or {}).get("ms_per_step", {})
        print(f"{run:<34} {rep:>5} {d['step_ms']:8.3f} {v['step_ms']:8.3f} {d['graph_step_ms']:8.3f} "
              f"{v['graph_step_ms']:8.3f} {kd.get('gemm', float('nan')):7.3f} {kv.get('gemm', float('nan')):7.3f} "
              f"{kd.get('total', float('nan')):7.3f} {kv.get('total', float('nan')):7.3f}")
        for key in ("step_ms", "graph_step_ms"):
            diffs[key].append(v[key] - d[key])
        for key in ("gemm", "total"):
            if key in kd and key in kv:
                diffs[key].append(kv[key] - kd[key])
for key, ds in diffs.items():
    print(f"{key}: verify - DEFAULT over {len(ds)} pairs: verify higher in {sum(x > 0 for x in ds)}, "
          f"median {statistics.median(ds):+.3f} ms, range {min(ds):+.3f} .. {max(ds):+.3f}")
