# One-off, 2026-12-03: run from the repo root with the .venv python.
import time, os, numpy as np
os.sched_setaffinity(0, {0})
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.triton.space import triton_space
from kselect.selector.model.features import featurize_candidates
from kselect.selector.model.cost_model import CostModel
f = CostModel.load("models/h200-bf16.json"); x = CostModel.load("models/h200-bf16.json"); x.booster_ = x.booster_; x.set_threads(1)
def t(fn, n=300):
    fn(); xs=[]
    for _ in range(n):
        t0=time.perf_counter(); fn(); xs.append(time.perf_counter()-t0)
    return round(np.median(xs)*1e3,3)
for p in (Problem(777, 4608, 3584, "bf16", "nt"), Problem(8, 9216, 3072, "bf16", "nt")):
    c = [Candidate.make("aten","mm")] + triton_space(p, "exhaustive")
    X = featurize_candidates(p, c, f.fingerprint)
    for _ in range(2): print(p.key, len(c), "numpy", t(lambda: f.selection_cost(X)), "xgboost", t(lambda: x.selection_cost(X)))
