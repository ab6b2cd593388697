"""Dev-CPU experiment (2026-12-03): how much of the EXHAUSTIVE space ever reaches the cascade's
stage-one top 64 over a grid of 8,941 shapes (1,835 of ~2,425 configs; ~78 % of a large shape's rows
kept, so pruning to that set would save only ~1.25x -- rejected). Run from the repository root:
    python reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/dev-cpu/reachable_space.py"""
import numpy as np, time, random
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_candidates, infeasible
from kselect.kernels.problem import Problem
from kselect.kernels.candidate import Candidate
from kselect.kernels.triton.space import triton_space
m = CostModel.load('models/h200-bf16.json'); m.set_threads(2)
b = m.booster_
def space(p): return [Candidate.make("aten", p.op)] + triton_space(p, "exhaustive")
def grid():
    Ms=[1,2,3,4,6,7,8,12,13,16,24,32,33,48,64,96,100,128,192,200,256,333,384,512,777,1024,1500,2048,4096,8192,16384]
    NK=[16,32,64,128,256,512,768,1024,1536,2048,2304,3072,3584,4096,5120,6144,8192,11008,14336,18944,28672,32000,50257,57344,128256]
    out=[]
    for M in Ms:
        for N in NK:
            for K in NK:
                if M*N*K > 2**40: continue
                out.append(Problem(M,N,K,"bf16","nt"))
    return out
G = grid(); random.Random(0).shuffle(G)
G = G[:6000] + [Problem(p.M,p.N,p.K,"bf16","nn") for p in G[:1500]] + [Problem(p.M,p.N,p.K,"bf16","nt","addmm") for p in G[1500:2500]] + [Problem(p.M,p.N,p.K,"bf16","nn","bmm",4) for p in G[2500:3000] if p.M*p.N*p.K<2**36]
t0=time.time(); union=set()
for p in G:
    c=space(p); X=np.asarray(featurize_candidates(p,c,m.fingerprint),dtype=np.float32)
    feas=np.flatnonzero(~infeasible(X))
    if len(feas)<=64: union |= {c[i].key for i in feas}; continue
    rough=-b.inplace_predict(X[feas],iteration_range=(0,5),validate_features=False)
    union |= {c[i].key for i in feas[np.argpartition(rough,63)[:64]]}
print(len(G),"grid shapes", len(union), "reachable keys", round(time.time()-t0,1), "s")
# test: off-grid random shapes + dataset shapes: kept share, top-1 / top-4 agreement
import pandas as pd
d = pd.read_parquet('data/h200-bf16/measurements.parquet')
probs = [Problem(int(r.M),int(r.N),int(r.K),r.dtype,r.layout,r.op,int(r.batch)) for r in d.drop_duplicates('problem_key').itertuples()]
rng = random.Random(1)
probs += [Problem(rng.randint(1,9000), rng.randint(16,60000), rng.randint(16,60000), "bf16", rng.choice(["nt","nn"])) for _ in range(300)]
same1=same4=0; shares=[]
for p in probs:
    c=space(p); X=np.asarray(featurize_candidates(p,c,m.fingerprint),dtype=np.float32)
    full=m.selection_cost(X)
    keep=np.array([x.backend!="triton" or x.key in union for x in c])
    pr=np.full(len(c),np.inf); pr[keep]=m.selection_cost(X[keep])
    shares.append(keep.mean())
    a=np.argsort(full,kind="stable")[:4]; bb=np.argsort(pr,kind="stable")[:4]
    same1 += a[0]==bb[0]; same4 += set(a)==set(bb)
print(len(probs),"test shapes: top-1 same", same1, "top-4 same", same4, "kept share median", np.median(shares), "min", min(shares))
