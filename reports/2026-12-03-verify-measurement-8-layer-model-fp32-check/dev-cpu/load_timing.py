# One-off, 2026-12-03: run from the repo root with the .venv python (models/h200-bf16.json).
# Before/after: the same script with selector/model/forest.py, selector/model/features.py and kernels/backend.py
# checked out at 3219f94 (before) and at this report's commit (after).
import time, torch, torch._inductor.kernel.mm
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.compat import choice_candidates
t=time.perf_counter(); m = CostModel.load("models/h200-bf16.json"); t1=time.perf_counter()
r = CostModelRanker(m, m.fingerprint); sp = r.warm_up(); t3=time.perf_counter()
choice_candidates.prime_ktc_memo(sp); t4=time.perf_counter()
print("load %.1f warm %.1f prime %.1f total %.1f ms" % ((t1-t)*1e3, (t3-t1)*1e3, (t4-t3)*1e3, (t4-t)*1e3))
