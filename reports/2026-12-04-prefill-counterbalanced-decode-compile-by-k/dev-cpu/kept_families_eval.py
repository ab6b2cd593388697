"""Dedupe-by-family variants of verify's adaptive k, next to the rows of
reports/2026-12-05-cost-model-h200-bf16/adaptive_k_eval.py (rank:ndcg part only).

It imports that script (its data, held-out costs and metrics: shapes, held_out, RULES), so
the rows of today's rule here are computed exactly as there.

Family key: backend:template + every params field except GROUP_M, num_stages, num_warps
(mm / persistent_tma -> BLOCK_M, BLOCK_N, BLOCK_K; decompose_k -> k_split; aten:mm alone).

Why: verify's adaptive k kept 4 tiles on the one-layer decode's lm_head, two pairs that differ
only in warps or stages; each kept tile costs 0.15-0.45 s of compile (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k).
Does keeping one tile per family, or a lower cap, lose held-out quality?

Run from the repository root (~2 min on 2 cores):
    .venv/bin/python reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families_eval.py \
        reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families.json
"""
import importlib.util
import json
import math
import sys

import numpy as np

SRC = "reports/2026-12-05-cost-model-h200-bf16/adaptive_k_eval.py"
_spec = importlib.util.spec_from_file_location("adaptive_k_eval", SRC)
orig = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(orig)   # loads the data; its sweeps run only as a script

from kselect.selector.decide.policy import adaptive_k  # noqa: E402

shapes, ends = orig.shapes, orig.ends
DROP = {"GROUP_M", "num_stages", "num_warps"}


def family_key(backend, template, params) -> str:
    p = json.loads(params) if params else {}
    rest = "-".join(f"{k}{v}" for k, v in sorted(p.items()) if k not in DROP)
    return f"{backend}:{template}" + (":" + rest if rest else "")


rows = shapes.rows
fam_str = np.array([family_key(b, t, p) for b, t, p in
                    zip(rows["backend"].to_numpy(str), rows["template"].to_numpy(str), rows["params"].to_numpy(str))])
_, fam = np.unique(fam_str, return_inverse=True)   # int family id per row


def first_of_family(f_sorted):
    """Positions (in the sorted order) of each family's best-ranked member, in rank order."""
    _, first = np.unique(f_sorted, return_index=True)
    return np.sort(first)


def kept_quality_sel(cost, select, stats=None) -> dict:
    """orig.kept_quality, but `select(sorted scores, sorted family ids)` returns the kept
    positions in the sorted order (not a count). Same ATen safety net, same metrics; `stats`
    gets (ranked picks, distinct families among them) per GEMM."""
    def count(rows):
        stats.append((len(rows), len(set(fam[rows].tolist()))))

    return orig.kept_quality_of(cost, lambda scores, rows: select(scores, fam[rows]),
                                on_kept=None if stats is None else count)


# --- selection rules (positions into the sorted order) --------------------------------------
def today(cap=4, spread=0.5, floor=1):
    """Today's rule, as orig's RULES: top adaptive_k (or fixed k when spread is inf)."""
    def sel(s, f):
        n = cap if spread == math.inf else adaptive_k(s, cap, False, spread=spread, floor=floor)
        return np.arange(max(n, 1))[:len(s)]
    return sel


def dedupe_families(cap=4, spread=0.5, floor=1, sd_over="all"):
    """Variant 1: one kept member per family (the best-ranked); adaptive k counts families:
    the families whose best member is within spread*sd of #1, clipped to floor..cap.
    sd_over="all": sd of all candidates' scores (today's threshold); "reps": adaptive_k run on
    the family representatives' scores alone (sd over the representatives)."""
    def sel(s, f):
        reps = first_of_family(f)
        if spread == math.inf:
            n = min(cap, len(reps))
        elif sd_over == "reps":
            n = adaptive_k(s[reps], cap, False, spread=spread, floor=floor)
        else:
            tol = spread * (float(np.std(s)) if len(s) > 1 else 0.0)
            n_close = int(np.sum(s[reps] - s[0] <= tol + 1e-12))
            n = max(1, min(cap, len(reps), max(floor, n_close)))
        return reps[:max(n, 1)]
    return sel


def dedupe_same_count(cap=4, spread=0.5, floor=1):
    """Variant 2: today's count n (adaptive_k over all scores), filled with the best-ranked
    member of each family in rank order (the same count, more diverse)."""
    def sel(s, f):
        n = cap if spread == math.inf else adaptive_k(s, cap, False, spread=spread, floor=floor)
        reps = first_of_family(f)
        return reps[:max(n, 1)]
    return sel


RULES = [
    ("today: cap 4, spread 0.5 (floor 1)", today()),
    ("dedupe families: cap 4, spread 0.5, floor 1", dedupe_families()),
    ("dedupe families (sd over reps): cap 4, spread 0.5, floor 1", dedupe_families(sd_over="reps")),
    ("dedupe same count: cap 4, spread 0.5, floor 1", dedupe_same_count()),
    ("today: floor 2, cap 4, spread 0.5", today(floor=2)),
    ("dedupe families: floor 2, cap 4, spread 0.5", dedupe_families(floor=2)),
    ("dedupe same count: floor 2, cap 4, spread 0.5", dedupe_same_count(floor=2)),
] + [(f"today: fixed k={k}", today(cap=k, spread=math.inf)) for k in (1, 2, 3, 4)] \
  + [(f"dedupe fixed k={k} families", dedupe_families(cap=k, spread=math.inf)) for k in (2, 3, 4)] \
  + [(f"today: cap {c}, spread 0.5", today(cap=c)) for c in (2, 3)] + [(f"dedupe families: cap {c}, spread 0.5", dedupe_families(cap=c)) for c in (2, 3)]

if __name__ == "__main__":
    out_path = sys.argv[1] if len(sys.argv) > 1 else "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/kept_families.json"
    n_fam = [len(np.unique(fam[a:b])) for a, b in zip(shapes.starts, ends)]
    print(f"{len(np.unique(fam))} families overall; per shape: rows mean {np.mean(np.diff(np.r_[shapes.starts, len(fam)])):.0f}, "
          f"families mean {np.mean(n_fam):.0f}", flush=True)
    cost = orig.held_out("rank:ndcg")
    ref = json.load(open("reports/2026-12-05-cost-model-h200-bf16/adaptive-k.json"))
    # today's and the dedupe rules through the family-aware kept_quality (the CHECK lines at
    # the end compare today's rows with adaptive-k.json's)
    out, famstats = {}, {}
    for key, sel in RULES:
        st = []
        out[key] = kept_quality_sel(cost, sel, st)
        st = np.array(st)
        famstats[key] = {"kept_templates_mean": float(st[:, 0].mean()),
                         "sets_with_a_family_of_size_gt1": int((st[:, 1] < st[:, 0]).sum()),
                         "sets_with_2plus_kept": int((st[:, 0] >= 2).sum()),
                         "distinct_families_mean": float(st[:, 1].mean())}
        print(key, {sc: {k: round(v, 4) for k, v in d.items()} for sc, d in out[key].items()}, famstats[key], flush=True)
    for k, r in (("today: cap 4, spread 0.5 (floor 1)", "cap 4, spread 0.5"), ("today: fixed k=2", "fixed k=2"),
                 ("today: fixed k=4", "fixed k=4"), ("today: floor 2, cap 4, spread 0.5", "floor 2, cap 4, spread 0.5"),
                 ("today: fixed k=1", "fixed k=1"), ("today: fixed k=3", "fixed k=3")):
        print("CHECK", k, "==", r, out[k] == ref[r], flush=True)
    json.dump({"rows": out, "family_stats": famstats}, open(out_path, "w"), indent=1)
