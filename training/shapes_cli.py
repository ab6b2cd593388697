"""`kselect shapes`: list or export named workload sets (or validate a shapes CSV)."""
from __future__ import annotations

import sys

from .shapes import (MODELS, TRAINING_WORKLOADS, WORKLOADS, dedup, read_shapes_csv, read_workload_column,
                     workload, write_shapes_csv)


def add_shape_args(p) -> None:
    """Shape-selection flags shared by every command that takes shapes."""
    p.add_argument("--workload", action="append", choices=WORKLOADS,
                   help="named workload set (repeatable; default: all but the held-out 'unseen')")
    p.add_argument("--models", help=f"comma-separated model families ({','.join(MODELS)})")
    p.add_argument("--shapes-file", help="CSV with columns M,N,K (optional op,dtype,layout,batch,model)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random workload")
    p.add_argument("--n-random", type=int, default=200, help="size of the random workload")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--max-gflop", type=float, default=0.0, help="drop shapes above this many GFLOP")


def select_shapes(args) -> tuple[list, dict]:
    """Problems and a problem-key -> workload-name map from the shared flags."""
    tags = {}
    if args.shapes_file:
        problems = read_shapes_csv(args.shapes_file)
        tags = {p.key: t or "file" for p, t in zip(problems, read_workload_column(args.shapes_file))}
    else:
        problems = []
        models = args.models.split(",") if args.models else None
        for name in args.workload or TRAINING_WORKLOADS:
            ps = workload(name, models=models, seed=args.seed, n_random=args.n_random, dtype=args.dtype)
            for p in ps:
                tags.setdefault(p.key, name)
            problems += ps
    problems = dedup(problems)
    if args.max_gflop:
        problems = [p for p in problems if p.flops <= args.max_gflop * 1e9]
    return problems, tags


def add_parser(sub) -> None:
    p = sub.add_parser("shapes", help="list or export the named GEMM workload sets")
    add_shape_args(p)
    p.add_argument("--out", help="write CSV here (default: stdout)")
    p.add_argument("--count", action="store_true", help="print only the number of shapes")
    p.set_defaults(func=run)


def run(args) -> int:
    problems, _ = select_shapes(args)
    if args.count:
        print(len(problems))
    elif args.out:
        write_shapes_csv(problems, args.out)
        print(f"wrote {len(problems)} shapes to {args.out}", file=sys.stderr)
    else:
        write_shapes_csv(problems, sys.stdout)
    return 0
