"""Verify with a price on compile time, held out: what the kept set waits for and what its
best kernel is worth, for several `compile_budget`s (policy.CompilePrice) and keep rules.

The kept templates compile in parallel, so a GEMM's measurement waits for the slowest of
them; the "wait" here is that slowest compile, in CPU ms measured on the dev machine for our
own kernel (data/triton-compile-sm90; the compile-cost model's prediction where a plan was not
measured). Kernel quality: the best measured time among the kept set + ATen, as % of the
shape's measured best (404 shapes, leave-one-family-out, the shipped rank:ndcg model's
held-out selection cost -- exactly adaptive_k_eval.py's). Every rule calls the selector's own
`choose_kept`, with the compile-cost model's predictions as its price, as verify does.

Then the shipped model's own decision on the one-layer decode's lm_head (8x128256x4096 nt over
the EXHAUSTIVE space): what it keeps with and without the price.

Run from the repository root (~3 min on the 2-core dev machine):
    .venv/bin/python reports/2026-12-05-cost-model-h200-bf16/compile_priced_eval.py OUT.json
"""
import importlib.util
import json
import sys

import numpy as np
import pandas as pd

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.backend import launch_plan
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.compile_time_model import CompileCostModel, compile_fields
from kselect.selector.model.compile_price import CompilePrice
from kselect.selector.decide.policy import choose_kept
from kselect.training.compile_times.collect import H200_SMS, PlannedCompile

_spec = importlib.util.spec_from_file_location("adaptive_k_eval", "reports/2026-12-05-cost-model-h200-bf16/adaptive_k_eval.py")
orig = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(orig)   # the data and held-out machinery; its sweeps run only as a script

shapes, ends, aten = orig.shapes, orig.ends, orig.aten
BUDGETS = (0.0, 1.0, 1.25, 1.5, 1.75, 2.0, 3.0)
MODEL = CompileCostModel.load("models/triton-compile-sm90.json")
measured = pd.concat([pd.read_csv(p) for p in sorted(__import__("pathlib").Path("data/triton-compile-sm90")
                                                     .glob("compile_times*.csv"))])
measured = measured[measured.status == "ok"].groupby("plan_id").cpu_ms.mean().to_dict()

rows = shapes.rows
cands = [Candidate.make(b, t, **json.loads(p or "{}")) for b, t, p in
         zip(rows["backend"].to_numpy(str), rows["template"].to_numpy(str), rows["params"].to_numpy(str))]
problems = [Problem(int(m), int(n), int(k), d, lay) for m, n, k, d, lay in
            zip(rows.M, rows.N, rows.K, rows.dtype, rows.layout)]
predicted = np.full(len(rows), np.nan)     # what the policy sees
wait_ms = np.zeros(len(rows))              # what the set waits for: measured where we have it
from_table = 0
for s, (a, b) in enumerate(zip(shapes.starts, ends)):
    predicted[a:b] = MODEL.predict_for(problems[a], cands[a:b])
for r, (c, p) in enumerate(zip(cands, problems)):
    if compile_fields(p, c) is None:
        continue
    pid = PlannedCompile(c, p, launch_plan(c, p, H200_SMS)).plan_id
    if pid in measured:
        wait_ms[r] = measured[pid]
        from_table += 1
    else:
        wait_ms[r] = predicted[r]
n_templates = sum(compile_fields(p, c) is not None for c, p in zip(cands, problems))


def evaluate(cost, k, adaptive, min_k, budget):
    pct, kept_n, wait, cpu, passed, multi = [], [], [], [], [], []
    for s, (a, b) in enumerate(zip(shapes.starts, ends)):
        price = CompilePrice(lambda idx, a=a: predicted[a + np.asarray(idx)], MODEL.typical_ms, budget) \
            if budget else None
        kept, _ = choose_kept(cands[a:b], cost[a:b], "verify", k, True, False, adaptive=adaptive,
                              min_k=min_k, compile_price=price)
        t = shapes.time[a:b][kept]
        pct.append(shapes.best[s] / t.min() if np.isfinite(t.min()) else 0.0)
        kept_n.append(len(kept))
        w = wait_ms[a:b][kept]
        wait.append(w.max())
        cpu.append(w.sum())
        passed.append(bool(price is not None and price.passed))
        multi.append(int((w > 0).sum()) >= 2)
    pct, wait, cpu, passed, multi = map(np.array, (pct, wait, cpu, passed, multi))
    out = {}
    for scope, m in (("all", np.ones(len(pct), bool)), ("oracle", shapes.oracle)):
        p = np.maximum(pct[m], 1e-9)
        out[scope] = {"shapes": int(m.sum()), "pct_of_best_geomean": float(np.exp(np.log(p).mean())),
                      "share_within_1pct": float((pct[m] >= 0.99).mean()),
                      "benchmarked_mean": float(np.mean(np.array(kept_n)[m])),
                      "wait_ms_mean": float(wait[m].mean()), "wait_ms_p90": float(np.percentile(wait[m], 90)),
                      "wait_ms_max": float(wait[m].max()), "compile_cpu_ms_mean": float(cpu[m].mean()),
                      "share_passing_over": float(passed[m].mean()),
                      "share_two_or_more_templates": float(multi[m].mean())}
    return out


def lm_head(budget):
    """The shipped model's own verify decision on the 1-layer decode's lm_head."""
    from kselect.selector.model.discovery import load_shipped
    from kselect.selector.decide.rankers import CostModelRanker

    problem = Problem(8, 128256, 4096, "bf16", "nt")
    model = load_shipped("h200-bf16.json")
    cs = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    scores = CostModelRanker(model, None).rank(problem, cs)
    price = CompilePrice(lambda idx: MODEL.predict_for(problem, [cs[i] for i in idx]), MODEL.typical_ms,
                         budget) if budget else None
    kept, why = choose_kept(cs, scores, "verify", 4, True, False, compile_price=price)
    ms = MODEL.predict_for(problem, [cs[i] for i in kept])
    return {"kept": [cs[i].key for i in kept], "predicted_compile_ms": [round(float(x), 1) for x in ms], "why": why}


if __name__ == "__main__":
    cost = orig.held_out("rank:ndcg")
    print(f"compile times: {from_table} of {n_templates} template rows from the measured table, "
          f"the rest predicted; typical compile {MODEL.typical_ms:.0f} ms", flush=True)
    res = {"typical_ms": MODEL.typical_ms, "template_rows_measured": from_table, "template_rows": n_templates,
           "rules": {}, "lm_head_8x128256x4096": {}}
    for label, k, adaptive, min_k in (("adaptive (default)", 4, True, 1), ("adaptive, min_k 2", 4, True, 2),
                                      ("fixed k=2", 2, False, 1), ("fixed k=4", 4, False, 1)):
        for budget in BUDGETS:
            key = f"{label}, budget {budget:g}" if budget else f"{label}, no price"
            res["rules"][key] = evaluate(cost, k, adaptive, min_k, budget)
            print(key, {sc: {kk: round(v, 4) for kk, v in d.items()} for sc, d in res["rules"][key].items()},
                  flush=True)
    for budget in BUDGETS:
        res["lm_head_8x128256x4096"][f"budget {budget:g}"] = lm_head(budget)
        print("lm_head budget", budget, res["lm_head_8x128256x4096"][f"budget {budget:g}"], flush=True)
    json.dump(res, open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/compile_priced.json", "w"), indent=1)
