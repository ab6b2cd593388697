# One-off, 2026-12-03: run from the repo root with the .venv python.
import time
t=time.perf_counter(); import torch; print("torch", round(time.perf_counter()-t,3))
t=time.perf_counter(); import torch._inductor.kernel.mm; print("inductor mm", round(time.perf_counter()-t,3))
t=time.perf_counter(); import xgboost; print("xgboost import", round(time.perf_counter()-t,3))
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.discovery import load_shipped
t=time.perf_counter(); m = CostModel.load("models/h200-bf16.json"); print("model load", round(time.perf_counter()-t,3))
from kselect.selector.decide.rankers import CostModelRanker
t=time.perf_counter(); r = CostModelRanker(m, m.fingerprint); sp = r.warm_up(); print("warm_up", round(time.perf_counter()-t,3))
from kselect.selector.compat import choice_candidates
t=time.perf_counter(); choice_candidates.prime_ktc_memo(sp); print("prime", round(time.perf_counter()-t,3))
