"""Every bf16 GEMM verify has measured on the H200 (every results.json and gpu_report.json
under reports/ but the pooled ones, which repeat their sources), decided again today with the shipped models, unpriced and at the default
compile budget: does the price change the kept set, and did any kept set's measured winner on
the H200 fall among the templates it passes over?

Run from the repository root (~1 min):
    .venv/bin/python reports/2026-12-05-compile-cost-sm90/h200_replay.py reports/2026-12-05-compile-cost-sm90/h200-replay.json
"""
import sys
import json, glob, collections
from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.compile_time_model import shipped_compile_cost
from kselect.selector.model.discovery import load_shipped
from kselect.selector.model.compile_price import COMPILE_BUDGET, CompilePrice
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.decide.policy import choose_kept

wins = collections.defaultdict(collections.Counter)   # problem -> winner counts over H200 measurements
for f in glob.glob("reports/**/results.json", recursive=True) + glob.glob("reports/**/gpu_report.json", recursive=True):
    if "-pooled" in f:
        continue           # pooled reports repeat their sources' runs
    try:
        d = json.load(open(f))
    except Exception:
        continue
    def walk(o):
        if isinstance(o, dict):
            if "problem" in o and isinstance(o.get("ms"), dict) and o["ms"]:
                ms = {k: v for k, v in o["ms"].items() if isinstance(v, (int, float))}
                if ms:
                    wins[o["problem"]][min(ms, key=ms.get)] += 1
                return
            for k, v in o.items():
                if k != "combined":
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(d)
model = load_shipped("h200-bf16.json")
ranker = CostModelRanker(model, None)
cc = shipped_compile_cost("sm_90")
print(len(wins), "problems with H200 verify measurements")
rows = []
for key, counter in sorted(wins.items()):
    op, size, dtype, layout = key.split(":")
    m, n, k = map(int, size.split("x"))
    if dtype != "bf16":
        continue
    p = Problem(m, n, k, dtype, layout)
    cands = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
    scores = ranker.rank(p, cands)
    un, _ = choose_kept(cands, scores, "verify", 4, True, False)
    price = CompilePrice(lambda idx: cc.predict_for(p, [cands[i] for i in idx]), cc.typical_ms, COMPILE_BUDGET)
    pr, why = choose_kept(cands, scores, "verify", 4, True, False, compile_price=price)
    ku, kp = [cands[i].key for i in un], [cands[i].key for i in pr]
    wu = cc.predict_for(p, [cands[i] for i in un]).max(); wp = cc.predict_for(p, [cands[i] for i in pr]).max()
    lost = [w for w in counter if w in ku and w not in kp]
    rows.append({"problem": key, "kept_unpriced": ku, "kept_priced": kp, "changed": ku != kp,
                 "slowest_predicted_ms": [round(float(wu), 1), round(float(wp), 1)],
                 "h200_winners": dict(counter), "winners_passed_over": lost})
    print(key, "kept", len(ku), "->", len(kp), "changed" if ku != kp else "same", f"wait {wu:.0f}->{wp:.0f}",
          "H200 winners", dict(counter), "LOST:" if lost else "", lost)
out = {"problems": len(rows), "changed": sum(r["changed"] for r in rows),
       "winners_passed_over": sum(len(r["winners_passed_over"]) for r in rows), "rows": rows}
print({k: v for k, v in out.items() if k != "rows"})
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/h200_replay.json", "w"), indent=1)
