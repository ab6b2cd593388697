"""The shipped model's ranking of one GEMM's whole EXHAUSTIVE space (ATen + Triton), best first.

    python reports/2026-12-04-prefill-cublas-gap-decision-latency-default-noise/dev-cpu/rank_one.py MxNxK [layout] [candidate keys to locate...]
"""
import json, sys, numpy as np
import kselect.selector.inductor.hook as ksi
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.triton.space import triton_space
meta = json.load(open("models/h200-bf16.meta.json"))
fp = dict(meta["fingerprint"]); fp.setdefault("fingerprint_id", "x")
sel = ksi.Selector("verify"); sel._load_ranker(fp); r = sel.ranker_for(fp)
M, N, K = map(int, sys.argv[1].split("x"))
p = Problem(M, N, K, "bf16", sys.argv[2] if len(sys.argv) > 2 else "nt")
cands = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
from kselect.selector.model.features import featurize_candidates
X = featurize_candidates(p, cands, r.model.fingerprint)
pred = r.model.predict(X)
order = np.argsort(pred)
keys = [c.key for c in cands]
for i in order[:8]: print("%8.4f" % pred[i], keys[i])
for want in sys.argv[3:]:
    j = keys.index(want); print("rank of", want, int(np.where(order == j)[0][0]), "%.4f" % pred[j])
ja = keys.index("aten:mm"); print("aten rank", int(np.where(order == ja)[0][0]), "%.4f" % pred[ja])
print("objective", r.model.objective)
