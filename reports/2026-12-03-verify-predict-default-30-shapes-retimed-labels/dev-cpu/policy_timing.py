"""Dev-CPU timing of the predict/verify policy (choose_kept) on a 2,401-candidate EXHAUSTIVE space,
this code against an older commit's selector/decide/policy.py, and their decisions compared on
randomised scores. Run from the repository root:
    python reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/dev-cpu/policy_timing.py c73e393
(2026-12-03, 2-core dev CPU: predict 0.137 -> 0.021 ms, verify 0.152 -> 0.056 ms; equal on
172,800 cases)."""
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.decide import policy as new

src = subprocess.run(["git", "show", f"{sys.argv[1]}:selector/decide/policy.py"], capture_output=True, text=True,
                     check=True).stdout
src = src.replace("from .fusion", "from kselect.selector.inductor.epilogue").replace("from .identity_memo",
                                                                          "from kselect.selector.decide.candidate_memo")
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write(src)
spec = importlib.util.spec_from_file_location("old_policy", f.name)
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)


def median_ms(fn, reps=300):
    for _ in range(20):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))


p = Problem(384, 8192, 3584)
cands = tuple([Candidate.make("aten", "mm")] + triton_space(p, "exhaustive"))
scores = np.random.default_rng(0).normal(size=len(cands))
for mode in ("predict", "verify"):
    t_old, t_new = (median_ms(lambda m=m: m.choose_kept(cands, scores, mode, 4, True, False, aten_margin=0.5))
                    for m in (old, new))
    print(f"{mode}: {t_old:.3f} -> {t_new:.3f} ms")

rng, n = np.random.default_rng(1), 0
for p in [Problem(384, 8192, 3584), Problem(8, 9216, 3072), Problem(7, 128256, 4096)]:
    base = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
    for trial in range(300):
        cs = list(base)
        if trial % 3 == 1:
            cs.insert(len(cs) // 2, Candidate.make("aten", "addmm"))
        if trial % 5 == 2:
            cs = cs[:40]
        cs = tuple(cs)
        s = rng.normal(size=len(cs)).round(rng.integers(0, 3))
        if trial % 4 == 0:
            s[rng.integers(0, len(s), 20)] = np.nan
        if trial % 7 == 0:
            s[0] = np.nan
        unseen = list(rng.integers(0, len(s), 3)) if trial % 6 == 0 else []
        for mode, k, keep, lt, marg, mk, ad in itertools.product(("predict", "verify"), (1, 4), (True, False),
                                                                  (True, False), (0.0, 0.5, 3.0), (1, 2),
                                                                  (True, False)):
            a = old.choose_kept(cs, s, mode, k, keep, lt, unseen=unseen, adaptive=ad, min_k=mk, aten_margin=marg)
            b = new.choose_kept(cs, s, mode, k, keep, lt, unseen=unseen, adaptive=ad, min_k=mk, aten_margin=marg)
            assert a == b, (mode, a, b)
            n += 1
print("decisions equal on", n, "cases")
