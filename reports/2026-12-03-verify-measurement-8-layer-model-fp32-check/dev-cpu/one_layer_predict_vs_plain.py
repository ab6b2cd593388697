"""Is predict's one-layer decode compile slower than plain's? All processes
measured with the compile-pool wait (call2 + call3 of reports/2026-12-03-predict-compile-first-decision-forest-serving, call1 of this report), read
from their results.json; one-sided Mann-Whitney U. Run from the repo root with the .venv python."""
import json
import statistics

from scipy.stats import mannwhitneyu

FILES = ["reports/2026-12-03-predict-compile-first-decision-forest-serving/call2/b/decode/results.json",
         "reports/2026-12-03-predict-compile-first-decision-forest-serving/call3/c/decode/results.json",
         "reports/2026-12-03-verify-measurement-8-layer-model-fp32-check/call1/decode/results.json"]
samples = {"plain": [], "kselect-predict": []}
for f in FILES:
    for run in json.load(open(f))["runs"]:
        if run.get("status") == "ok" and run["variant"] in samples:
            samples[run["variant"]].append(run["compile_s"])
plain, pred = samples["plain"], samples["kselect-predict"]
print("plain", len(plain), sorted(plain), "median", statistics.median(plain))
print("predict", len(pred), sorted(pred), "median", statistics.median(pred))
print("ratio of medians", round(statistics.median(pred) / statistics.median(plain), 3))
print("one-sided Mann-Whitney U (predict > plain):", mannwhitneyu(pred, plain, alternative="greater"))
