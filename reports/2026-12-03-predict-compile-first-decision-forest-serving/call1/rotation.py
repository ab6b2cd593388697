"""One-off (2026-12-03): does the number of rotating operand copies change cuBLAS's time
on lm_head-like GEMMs? The collector rotates 2 copies of a 1 GB weight (rotation_count), verify
1 (MAX_ROTATION_BYTES). Times ATen and the dataset's fastest Triton tile with 1, 2 and 3
copies in the one harness (kernels.timing.time_runners), rounds interleaved."""
import json, sys, time
import torch
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.backend import get_backend
from kselect.kernels.operands import make_operands
from kselect.kernels.timing import time_runners, warm_gpu

SHAPES = [(7, 128256, 4096, "triton:mm:BK128-BM16-BN64-G8-S5-W4"),
          (16, 128256, 4096, "triton:mm:BK128-BM16-BN64-G8-S4-W2"),
          (64, 128256, 4096, "triton:mm:BK64-BM64-BN128-G8-S3-W4"),
          (7, 128256, 8192, "triton:mm:BK128-BM16-BN256-G8-S3-W4"),
          (8, 14336, 4096, "triton:mm:BK128-BM16-BN64-G8-S5-W4")]

def parse(key):
    b, t, p = key.split(":")
    short = {"BM": "BLOCK_M", "BN": "BLOCK_N", "BK": "BLOCK_K", "G": "GROUP_M", "S": "num_stages", "W": "num_warps"}
    kw = {}
    for part in p.split("-"):
        name = part.rstrip("0123456789"); kw[short[name]] = int(part[len(name):])
    return Candidate.make(b, t, **kw)

out = []
warm_gpu(300)
for M, N, K, tkey in SHAPES:
    p = Problem(M, N, K, "bf16", "nt")
    sets = [make_operands(p, "cuda", seed=s) for s in range(3)]
    cands = [Candidate.make("aten", "mm"), parse(tkey)]
    runs = {}
    for c in cands:
        be = get_backend(c.backend)
        comp = be.compile(c, p)
        runs[c.key] = [be.runner(comp, s) for s in sets]
    for rnd in range(3):
        for copies in (1, 2, 3):
            for target in (0.25, 0.5):
                for c in cands:
                    t = time_runners(runs[c.key][:copies], target_ms=target, replays=7)
                    r = dict(shape=f"{M}x{N}x{K}", cand=c.key, copies=copies, target_ms=target, round=rnd,
                             ms=t.median_ms, spread=t.spread, reps=t.reps)
                    out.append(r)
    del sets, runs
    torch.cuda.empty_cache()
    for c in cands:
        for copies in (1, 2, 3):
            xs = sorted(r["ms"] for r in out if r["shape"] == f"{M}x{N}x{K}" and r["cand"] == c.key and r["copies"] == copies)
            print(f"{M}x{N}x{K} {c.key:45s} copies={copies} median {xs[len(xs)//2]:.4f} min {xs[0]:.4f} max {xs[-1]:.4f}", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
