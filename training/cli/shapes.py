"""`kselect shapes`: list or export named workload sets (or validate a shapes CSV)."""

from __future__ import annotations

import sys

from kselect.training.cli.flags import add_shape_args, shapes_from_args
from kselect.training.workloads.shapes import write_shapes_csv


def add_parser(sub) -> None:
    p = sub.add_parser("shapes", help="list or export the named GEMM workload sets")
    add_shape_args(p)
    p.add_argument("--out", help="write CSV here (default: stdout)")
    p.add_argument("--count", action="store_true", help="print only the number of shapes")
    p.set_defaults(func=run)


def run(args) -> int:
    problems, _ = shapes_from_args(args)
    if args.count:
        print(len(problems))
    elif args.out:
        write_shapes_csv(problems, args.out)
        print(f"wrote {len(problems)} shapes to {args.out}", file=sys.stderr)
    else:
        write_shapes_csv(problems, sys.stdout)
    return 0
