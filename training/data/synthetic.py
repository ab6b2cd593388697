"""A small synthetic dataset in the real schema, for tests and CPU development.

Timings come from a simple analytic function (waves x per-tile time, tile traffic over
bandwidth, knob-dependent efficiency, launch overhead, ~3% deterministic noise) over the
real candidate spaces of `triton_space`, so every code path of training and evaluation
runs without a GPU. It is NOT a stand-in for measurements: no result on it means anything
about real hardware.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.training.data.dataset import COLUMNS, conform
from kselect.training.data.rows import row_for

FINGERPRINT = {
    "gpu_name": "SYNTHETIC H200-like",
    "sm_count": 132,
    "shared_memory_per_block_optin": 232448,
    "l2_cache_bytes": 60 * 2**20,
    "compute_capability": "9.0",
    "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0},
    "mem_bandwidth_gbs": 4800.0,
    "fingerprint_id": "synthetic0000000",
}
FAMILIES = {  # family -> (N, K) pairs of its Linear layers
    "llama3-8b": [(4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096)],
    "mistral-7b": [(4096, 4096), (28672, 4096), (4096, 14336)],
    "gpt2": [(2304, 768), (768, 768), (3072, 768), (768, 3072)],
    "random": [(1000, 3000), (5120, 333), (256, 8192), (96, 65536)],
}


def _noise(key: str) -> float:
    h = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return float(np.exp(0.03 * ((h / 2**64) * 2 - 1)))


def synthetic_time_ms(p: Problem, c: Candidate) -> float | None:
    """Analytic time of candidate c on problem p; None = the candidate fails (shared memory)."""
    peak, bw, sm = 989e12, 4.8e12, 132
    eb, flops = p.dtype_bytes, p.flops
    t_roof = max(flops / peak, eb * p.batch * (p.M * p.K + p.K * p.N + p.M * p.N) / bw)
    if c.backend == "aten":
        eff = 0.82 if min(p.M, p.N) >= 256 else 0.55
        return (t_roof / eff + 6e-6) * 1e3 * _noise(p.key + c.key)
    if c.template == "decompose_k":
        s = c.get("k_split")
        t = t_roof / 0.6 * (1 + 0.02 * s) + 4e-6 + 2e-6 * s
        return t * 1e3 * _noise(p.key + c.key)
    bm, bn, bk = c.get("BLOCK_M"), c.get("BLOCK_N"), c.get("BLOCK_K")
    st, w, g = c.get("num_stages"), c.get("num_warps"), c.get("GROUP_M")
    smem = eb * (bm * bk + bn * bk) * max(st - 1, 1)  # the collector's pruning rule
    if smem > 232448:
        return None
    tiles = -(-p.M // bm) * -(-p.N // bn) * p.batch
    k_iters = -(-p.K // bk)
    eff = 0.8 * min(1.0, (bm * bn) / (64 * 64)) ** 0.3 * (1.0 if w in (4, 8) else 0.75)
    eff *= {1: 0.5, 2: 0.7, 3: 0.9, 4: 1.0, 5: 0.97}.get(st, 0.9)
    if c.template == "persistent_tma":
        eff *= 1.08 if tiles > sm else 0.9
    per_tile = 2 * bm * bn * bk * k_iters / (peak / sm) / eff
    t_waves = -(-tiles // sm) * per_tile
    traffic = eb * p.batch * (p.M * p.K * -(-p.N // bn) + p.K * p.N * -(-p.M // bm)) / (1 + 0.1 * g)
    t = max(t_waves, traffic / bw / 3.0, t_roof) + 3e-6 + 2e-8 * k_iters * (1 + (bk < 32))
    return t * 1e3 * _noise(p.key + c.key)


def synthetic_problems(seed: int = 0, m_values=(1, 16, 128, 1024, 4096)) -> list[Problem]:
    out = []
    for fam, nk in FAMILIES.items():
        for n, k in nk:
            for m in m_values:
                out.append(Problem(m, n, k, "bf16", "nt", "mm", model=fam))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def synthetic_dataset(n_shapes: int = 24, n_oracle: int = 6, sample: int = 120, seed: int = 0) -> pd.DataFrame:
    """Rows in the dataset schema for `n_shapes` shapes; the first `n_oracle` measure the full
    exhaustive space, the others ATen + DEFAULT + `sample` random exhaustive candidates."""
    rng = np.random.default_rng(seed)
    problems = synthetic_problems(seed)[:n_shapes]
    rows = []
    for i, p in enumerate(problems):
        oracle = i < n_oracle
        exhaustive = triton_space(p, "exhaustive")
        default = triton_space(p, "default")
        if oracle:
            cands = exhaustive
        else:
            keep = rng.choice(len(exhaustive), size=min(sample, len(exhaustive)), replace=False)
            cands = list(dict.fromkeys(default + [exhaustive[j] for j in sorted(keep)]))
        cands = [Candidate.make("aten", "mm")] + cands
        for c in cands:
            t = synthetic_time_ms(p, c)
            rows.append(
                row_for(
                    p,
                    c,
                    workload="synthetic",
                    status="ok" if t is not None else "pruned",
                    error="" if t is not None else "needs more shared memory than the device has",
                    time_ms=t if t is not None else np.nan,
                    time_min_ms=t,
                    time_max_ms=t,
                    spread=0.0,
                    noisy=False,
                    reps=10,
                    method="synthetic",
                    rel_error=0.0,
                    compile_s=0.0,
                    oracle=oracle,
                    space="exhaustive" if oracle else "sampled",
                    fingerprint_id=FINGERPRINT["fingerprint_id"],
                    worker="synthetic",
                    collected_at=0.0,
                )
            )
    df = pd.DataFrame(rows)
    assert set(COLUMNS) <= set(df.columns)
    return conform(df)
