"""A/B: whole predict decision (KTC mapping + Selector.select, cache miss) per GEMM."""
import sys, time, statistics, tempfile, os, json
import numpy as np
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.inductor.hook import Selector
from kselect.selector.compat import choice_candidates
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.triton.space import triton_space

import importlib.util
spec = importlib.util.spec_from_file_location("br", os.environ["BENCH_RANK"]); br = importlib.util.module_from_spec(spec); spec.loader.exec_module(br)
m = CostModel.load(os.environ["MODEL"]); m.set_threads(1)
r = CostModelRanker(m, m.fingerprint); r.warm_up()
mapf = getattr(choice_candidates, "ktc_candidates", None) or (lambda ks: [choice_candidates.ktc_candidate(k) for k in ks])
shapes = [(4096,4096,4096),(333,7168,5120),(8,4096,14336),(1000,3000,777),(8192,1024,8192),(2048,28672,4096)]
probs = []
for s in shapes:
    p = Problem(*s, "bf16", "nt"); c = [Candidate.make("aten","mm")] + triton_space(p, "exhaustive")
    probs.append((p, br.inductor_ktcs(c), c))
sel = Selector(mode="predict", ranker=r, cache_dir=tempfile.mkdtemp())
res = {}
for rep in range(int(sys.argv[1]) + 1):
    for p, ktcs, c in probs:
        t0 = time.perf_counter()
        mapped = mapf(ktcs)
        sel.select("templates", p, {"out": p.key, "rep": rep}, {"fingerprint_id": "x"}, mapped)
        if rep: res.setdefault(len(c), []).append((time.perf_counter() - t0) * 1e3)
        assert mapped == c
allv = [v for vs in res.values() for v in vs]
import kselect.selector.inductor.hook as _ksi
print(json.dumps({"code": _ksi.__file__, "cascade": [m.cascade_trees, m.cascade_keep], "median_ms": round(statistics.median(allv), 2), "p90_ms": round(float(np.percentile(allv, 90)), 2),
                  "by_candidates": {n: round(statistics.median(v), 2) for n, v in sorted(res.items())}}))
