"""What kselect's one-time ranker load costs, and what its warm-up buys, on decode-only graphs.

Why: on the one-layer decode the load is most of what predict adds to plain's compile
(docs/e2e.md). This times, in fresh processes with Inductor already imported (as inside a
compile), the load's parts and the first decisions' ranking for the five one-layer decode
GEMMs (M = 8): with the fixed warm-up (one 4096^3 GEMM's space: what the selector did until
2026-12-05), with the warm-up for the graph's own GEMMs (what it does since),
and with none.

Usage: python reports/2026-12-05-ranker-load-dev-cpu/load_parts.py OUT.json [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

MODES = ("fixed", "graph", "none")
DECODE_GEMMS = [(8, 6144, 4096), (8, 4096, 4096), (8, 28672, 4096), (8, 4096, 14336), (8, 128256, 4096)]


def one_process(warm: str) -> dict:
    import torch._inductor.lowering  # noqa: F401 -- a compile has these imported already
    import torch._inductor.select_algorithm  # noqa: F401

    from kselect.kernels.backend import Candidate, Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.selector.compat import choice_candidates
    from kselect.selector.model import discovery
    from kselect.selector.decide import rankers
    from kselect.selector.decide.cache import candidate_set_digest

    repo = Path(__file__).resolve().parents[2]
    fingerprint = dict(json.loads((repo / "models/h200-bf16.meta.json").read_text())["fingerprint"])
    fingerprint["device_type"] = "cuda"
    out, t = {"warm_up": warm}, time.perf_counter
    problems = [Problem(m, n, k, "bf16", "nt") for m, n, k in DECODE_GEMMS]
    t0 = t()
    model = discovery.load_shipped(fingerprint=fingerprint)
    model.set_threads(1)
    ranker = rankers.CostModelRanker(model, fingerprint)
    ranker.check()
    out["model_ms"] = (t() - t0) * 1e3
    if warm != "none":   # what the selector does after the model: warm, then prime its memos
        t1 = t()
        space = ranker.warm_up(problems if warm == "graph" else None)
        out["warm_up_ms"] = (t() - t1) * 1e3
        t1 = t()
        choice_candidates.prime_ktc_memo(space)
        candidate_set_digest(c.key for c in space)
        out["prime_and_digest_ms"] = (t() - t1) * 1e3
    out["load_ms"] = (t() - t0) * 1e3
    out["rank_ms"] = []
    for problem in problems:
        t1 = t()
        candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
        ranker.rank(problem, candidates)
        out["rank_ms"].append((t() - t1) * 1e3)
    out["candidates"] = len(candidates)
    out["load_plus_ranking_ms"] = out["load_ms"] + sum(out["rank_ms"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child)))
        return
    runs = []
    for _ in range(args.runs):
        for mode in MODES:   # alternated, each in a fresh process
            got = subprocess.run([sys.executable, __file__, args.out, "--child", mode],
                                 check=True, capture_output=True, text=True)
            runs.append(json.loads(got.stdout.strip().splitlines()[-1]))
    Path(args.out).write_text(json.dumps({"command": " ".join(["python"] + sys.argv), "runs": runs}, indent=1) + "\n")
    for r in runs:
        print(f"warm-up {r['warm_up']:5}: load {r['load_ms']:6.1f} ms, "
              f"first decision ranking {r['rank_ms'][0]:5.1f} ms, five {sum(r['rank_ms']):5.1f} ms, "
              f"together {r['load_plus_ranking_ms']:6.1f} ms")


if __name__ == "__main__":
    main()
