"""The one-layer decode, predict vs plain, phase by phase. The nine processes
each 2026-12-03 one-layer run (read from their results.json): per Inductor phase the
medians, the difference, and a two-sided Mann-Whitney U p-value, for the phases >= 0.1 s.
Run from the repo root with the .venv python."""
import json
import statistics

from scipy.stats import mannwhitneyu

FILES = ["reports/2026-12-03-predict-compile-first-decision-forest-serving/call2/b/decode/results.json",
         "reports/2026-12-03-predict-compile-first-decision-forest-serving/call3/c/decode/results.json",
         "reports/2026-12-03-verify-measurement-8-layer-model-fp32-check/call1/decode/results.json"]
runs = {"plain": [], "kselect-predict": []}
for f in FILES:
    for r in json.load(open(f))["runs"]:
        if r.get("status") == "ok" and r["variant"] in runs:
            runs[r["variant"]].append({"compile_s": r["compile_s"], **r.get("compile_phases", {})})
plain, pred = runs["plain"], runs["kselect-predict"]
print(f"processes: plain {len(plain)}, predict {len(pred)}")
names = [k for k in plain[0] if statistics.median(r.get(k, 0.0) for r in plain) >= 0.1]
print(f"{'phase':45s} {'plain':>7s} {'predict':>7s} {'diff':>7s} {'p':>6s}")
for k in names:
    a, b = [r.get(k, 0.0) for r in plain], [r.get(k, 0.0) for r in pred]
    p = mannwhitneyu(b, a, alternative="two-sided").pvalue
    print(f"{k:45s} {statistics.median(a):7.3f} {statistics.median(b):7.3f} "
          f"{statistics.median(b) - statistics.median(a):+7.3f} {p:6.3f}")
