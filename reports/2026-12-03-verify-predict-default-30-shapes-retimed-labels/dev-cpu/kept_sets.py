"""Predict and verify kept sets of two models on the bench shapes and the decode GEMMs (CPU,
deterministic). Run on 2026-12-03: `python reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/dev-cpu/kept_sets.py <c73e393's
models/h200-bf16.json, extracted with git show> models/h200-bf16.json` -> 30 of 36 identical; on the
26 autotuned bench shapes predict identical, verify kept sets identical on 25."""
import sys, csv
from kselect.selector.model.cost_model import CostModel
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.decide.policy import choose_kept
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.triton.space import triton_space
shapes = [Problem(int(x["M"]), int(x["N"]), int(x["K"]), "bf16", x.get("layout") or "nt") for x in csv.DictReader(open("data/shapes/h200-bf16-bench.csv"))]
shapes += [Problem(8, n, k) for n, k in ((4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (128256, 4096), (14336, 4096))]
rankers = []
for path in sys.argv[1:]:
    m = CostModel.load(path); m.set_threads(2); rankers.append(CostModelRanker(m, m.fingerprint))
same = 0
for p in shapes:
    c = tuple([Candidate.make("aten", "mm")] + triton_space(p, "exhaustive"))
    res = []
    for r in rankers:
        s = r.rank(p, c)
        pk, _ = choose_kept(c, s, "predict", 4, True, False, aten_margin=0.5)
        vk, _ = choose_kept(c, s, "verify", 4, True, False)
        res.append(([c[i].key for i in pk], [c[i].key for i in vk]))
    if res[0] == res[1]:
        same += 1
    else:
        print(p.key, "\n   old", res[0], "\n   new", res[1])
print(same, "of", len(shapes), "identical")
