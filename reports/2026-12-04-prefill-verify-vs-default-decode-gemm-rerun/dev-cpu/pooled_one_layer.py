"""The one-layer decode (llama3-8b-1l), predict vs plain, every process of
reports/2026-12-03-predict-compile-first-decision-forest-serving, reports/2026-12-03-verify-measurement-8-layer-model-fp32-check and this report pooled from their results.json (the profiled
processes of call2's decode1-prof left out: cProfile slows a compile). Per report and pooled:
median compile s (predict with its model load), the ratio the target uses, a one-sided
Mann-Whitney U p-value for "predict slower"; for this report also the compiling
process's CPU seconds, and Inductor's phases. Run from the repo root with the .venv python."""
import json
import statistics

from scipy.stats import mannwhitneyu

FILES = {"s10": ["reports/2026-12-03-predict-compile-first-decision-forest-serving/call2/b/decode/results.json",
                 "reports/2026-12-03-predict-compile-first-decision-forest-serving/call3/c/decode/results.json"],
         "s11": ["reports/2026-12-03-verify-measurement-8-layer-model-fp32-check/call1/decode/results.json"],
         "s13": ["reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call2/y/decode1/results.json"]}
med = statistics.median


def runs_of(files):
    out = {"plain": [], "kselect-predict": []}
    for f in files:
        for r in json.load(open(f))["runs"]:
            if r.get("status") == "ok" and r["variant"] in out and r["model"] == "llama3-8b-1l":
                out[r["variant"]].append(r)
    return out


def compare(label, runs):
    plain = [r["compile_s"] for r in runs["plain"]]
    pred = [r["compile_s"] + (r.get("kselect_load_s") or 0.0) for r in runs["kselect-predict"]]
    p = mannwhitneyu(pred, plain, alternative="greater").pvalue
    print(f"{label:8s} n={len(plain)}/{len(pred)}  plain {med(plain):.3f} s  predict+load {med(pred):.3f} s  "
          f"ratio {med(pred) / med(plain):.3f}  p(predict slower)={p:.3f}")
    return plain, pred


every = {"plain": [], "kselect-predict": []}
for label, files in FILES.items():
    runs = runs_of(files)
    compare(label, runs)
    for v in every:
        every[v] += runs[v]
plain, pred = compare("pooled", every)
print("  plain samples  ", sorted(round(x, 2) for x in plain))
print("  predict samples", sorted(round(x, 2) for x in pred))
loads = [r["kselect_load_s"] for r in every["kselect-predict"] if r.get("kselect_load_s")]
print(f"  model load: median {med(loads):.3f} s (min {min(loads):.3f}, max {max(loads):.3f})")

s13 = runs_of(FILES["s13"])
cp = [r["compile_cpu_s"] for r in s13["plain"]]
cq = [r["compile_cpu_s"] + r["kselect_load_s"] for r in s13["kselect-predict"]]
print(f"s13 compiling process CPU s: plain {med(cp):.3f}, predict+load {med(cq):.3f}, ratio {med(cq) / med(cp):.3f}, "
      f"p(predict more)={mannwhitneyu(cq, cp, alternative='greater').pvalue:.3f}")
print(f"s13 CPU / wall per process: plain {med(c / r['compile_s'] for c, r in zip(cp, s13['plain'])):.2f}, "
      f"predict {med(r['compile_cpu_s'] / r['compile_s'] for r in s13['kselect-predict']):.2f}")
dec = [r["kselect"]["decision_cpu_ms"] for r in s13["kselect-predict"] if r.get("kselect")]
print(f"s13 predict decisions, CPU ms per compile: median {med(dec):.1f}")
print(f"\n{'s13 phase':45s} {'plain':>7s} {'predict':>7s} {'diff':>7s} {'p':>6s}")
names = [k for k in s13["plain"][0]["compile_phases"] if med(r["compile_phases"].get(k, 0.0) for r in s13["plain"]) >= 0.1]
for k in names:
    a = [r["compile_phases"].get(k, 0.0) for r in s13["plain"]]
    b = [r["compile_phases"].get(k, 0.0) for r in s13["kselect-predict"]]
    print(f"{k:45s} {med(a):7.3f} {med(b):7.3f} {med(b) - med(a):+7.3f} "
          f"{mannwhitneyu(b, a, alternative='two-sided').pvalue:6.3f}")
