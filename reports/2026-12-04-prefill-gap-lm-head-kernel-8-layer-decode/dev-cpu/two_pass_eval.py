"""Verify decides twice on a GPU: the templates stage (early, over the whole space) keeps the
adaptive top-k families + ATen; then the choices stage (selector/inductor/hook.py `_guarded`)
ranks those kept choices again and applies the same adaptive rule to them alone. Its spread
is 0.5 standard deviations *of the kept set's scores*, not of the whole space's, so the second
pass can drop what the first kept: on the one-layer decode's lm_head 4 families + ATen became
2 + ATen (reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode s4). The held-out numbers (adaptive-k.json,
kept_families.json) model one pass. What does the second pass do to them?

Same data, held-out costs and metrics as reports/2026-12-05-cost-model-h200-bf16/adaptive_k_eval.py
(imported), families as reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families_eval.py (imported).

Run from the repository root (~2 min on 2 cores):
    .venv/bin/python reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/dev-cpu/two_pass_eval.py reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/dev-cpu/two_pass.json
"""
import importlib.util
import json
import math
import sys

import numpy as np

from kselect.selector.decide.policy import adaptive_k


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # loads the data; their sweeps run only as scripts
    return mod


fam_eval = _load("kept_families_eval", "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families_eval.py")
orig, fam, first_of_family = fam_eval.orig, fam_eval.fam, fam_eval.first_of_family


def rule(cap=4, spread=0.5, floor=1, passes=1):
    """Positions (into the sorted order) verify keeps: pass 1 = the shipped rule (adaptive_k
    over all scores, one per family); pass 2 = the same rule over pass 1's kept + the first
    ATen (the choices Inductor hands the second stage)."""
    def sel(s, rows):
        f = fam[rows]
        reps = first_of_family(f)
        n = cap if spread == math.inf else adaptive_k(s, cap, False, spread=spread, floor=floor)
        kept = reps[:max(n, 1)]
        if passes == 1:
            return kept
        aten_pos = np.flatnonzero(orig.aten[rows])[:1]
        second = np.unique(np.r_[kept, aten_pos]).astype(int)   # positions: ascending = by score
        n2 = cap if spread == math.inf else adaptive_k(s[second], cap, False, spread=spread, floor=floor)
        seen, out = set(), []
        for p in second:
            if len(out) >= n2:
                break
            if f[p] not in seen:
                seen.add(f[p])
                out.append(p)
        return np.array(out, dtype=int)
    return sel


RULES = [(f"{label}, {p} pass{'es' if p > 1 else ''}", rule(passes=p, **kw))
         for label, kw in (("adaptive: cap 4, spread 0.5, floor 1", {}),
                           ("adaptive: cap 4, spread 0.5, floor 2", {"floor": 2}),
                           ("adaptive: cap 2, spread 0.5, floor 1", {"cap": 2}))
         for p in (1, 2)]

if __name__ == "__main__":
    out_path = sys.argv[1] if len(sys.argv) > 1 else "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/dev-cpu/two_pass.json"
    cost = orig.held_out("rank:ndcg")
    out = {}
    for key, sel in RULES:
        kept = []
        out[key] = orig.kept_quality_of(cost, sel, on_kept=lambda rows: kept.append(len(rows)))
        out[key]["all"]["ranked_kept_mean"] = float(np.mean(kept))
        print(key, {sc: {k: round(v, 4) for k, v in d.items()} for sc, d in out[key].items()}, flush=True)
    json.dump(out, open(out_path, "w"), indent=1)
