"""`kselect bench rank`: time ranking one GEMM's whole space on one CPU core, as a selector
inside a compile runs it (training/bench/rank.py)."""

from __future__ import annotations

import json

from kselect.kernels.problem import Problem
from kselect.training.bench import rank


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "rank",
        help="time ranking one GEMM's whole space (featurise + predict)",
        description=rank.__doc__.split("\n\n")[0],
    )
    p.add_argument("--model", required=True, help="cost-model file (.json with its .meta.json)")
    p.add_argument("--reps", type=int, default=200, help="timed repetitions (default 200)")
    p.add_argument("--shape", default="4096x4096x4096", help="MxNxK (bf16, nt)")
    p.add_argument(
        "--contend",
        action="store_true",
        help="also time with one busy Python thread (as inside a compile), with and "
        "without the selector's short GIL switch interval",
    )
    p.add_argument(
        "--decision",
        action="store_true",
        help="also time predict mode's whole per-GEMM decision: Inductor's choices "
        "mapped to candidates, cache key and miss, ranking, policy",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        m, n, k = (int(x) for x in args.shape.lower().split("x"))
    except ValueError:
        raise ValueError(f"--shape {args.shape!r}: expected MxNxK, e.g. 4096x4096x4096") from None
    if args.reps < 1:
        raise ValueError(f"--reps must be >= 1, got {args.reps}")
    timings = rank.rank_timings(args.model, Problem(m, n, k), args.reps, args.contend, args.decision)
    print(json.dumps(timings, indent=1))
    return 0
