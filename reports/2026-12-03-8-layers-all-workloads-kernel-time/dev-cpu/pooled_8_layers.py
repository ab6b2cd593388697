"""Every 8-layer (llama3-8b-8l) process of reports/2026-12-03-verify-measurement-8-layer-model-fp32-check and of this report,
pooled per workload and variant from their results.json: medians of compile s (+ kselect's
model load), eager step, GPU-only step and GEMM kernel time, and the ratios the targets use.
Run from the repo root with the .venv python."""
import glob
import json
import statistics

from scipy.stats import mannwhitneyu

FILES = sorted(glob.glob("reports/2026-12-03-verify-measurement-8-layer-model-fp32-check/call[23]/*8/results.json")
               + glob.glob("reports/2026-12-03-8-layers-all-workloads-kernel-time/call*/*/*8/results.json"))
pool: dict = {}
for f in FILES:
    for r in json.load(open(f))["runs"]:
        if r.get("status") != "ok" or r["model"] != "llama3-8b-8l":
            continue
        p = pool.setdefault(r["workload"], {}).setdefault(r["variant"], {"compile": [], "step": [], "gpu": [],
                                                                            "gemm": [], "files": set()})
        p["compile"].append(r["compile_s"] + (r.get("kselect_load_s") or 0.0))
        p["step"].append(r["step_ms"])
        if r.get("graph_step_ms"):
            p["gpu"].append(r["graph_step_ms"])
        if (r.get("kernel_time") or {}).get("ms_per_step"):
            p["gemm"].append(r["kernel_time"]["ms_per_step"]["gemm"])
        p["files"].add(f.split("/")[1] + "/" + f.split("/")[2])

med = statistics.median
for w, vs in pool.items():
    print(f"== {w}")
    for v, p in vs.items():
        print(f"  {v:16s} n={len(p['step'])} compile(+load) {med(p['compile']):7.2f} s  step {med(p['step']):8.3f} ms"
              f"  gpu-only {med(p['gpu']) if p['gpu'] else float('nan'):8.3f}"
              f"  gemm {med(p['gemm']) if p['gemm'] else float('nan'):8.3f} (n={len(p['gemm'])})  {sorted(p['files'])}")
        print(f"  {'':16s} compile samples {[round(x, 2) for x in p['compile']]}")
        print(f"  {'':16s} step samples {[round(x, 3) for x in p['step']]}")
    plain, default = vs.get("plain"), vs.get("default")
    for v in ("kselect-verify", "kselect-predict"):
        if v not in vs:
            continue
        line = f"  {v}: compile {med(vs[v]['compile']) / med(plain['compile']):.3f}x plain"
        if v == "kselect-verify" and default:
            line += f", step {med(vs[v]['step']) / med(default['step']):.3f}x default"
            if vs[v]["gpu"] and default["gpu"]:
                line += f", GPU-only {med(vs[v]['gpu']) / med(default['gpu']):.3f}x"
            if vs[v]["gemm"] and default["gemm"]:
                line += f", GEMM kernels {med(vs[v]['gemm']) / med(default['gemm']):.3f}x"
            if len(vs[v]["step"]) >= 2 and len(default["step"]) >= 2:
                u = mannwhitneyu(vs[v]["step"], default["step"], alternative="greater")
                line += f"; one-sided Mann-Whitney (verify step > default's) p={u.pvalue:.3f}"
        print(line)
