"""`kselect faithfulness`: collector time vs compiled-program time vs Inductor's autotune
number, per (shape, candidate), on this GPU (training/measure/faithfulness.py)."""

from __future__ import annotations

import json

from kselect.training.cli.output import Console
from kselect.training.measure.faithfulness import DEFAULT_SHAPES, bf16_problems, measure_faithfulness, spread_sample
from kselect.training.workloads.shapes import read_shapes_csv


def add_parser(sub) -> None:
    p = sub.add_parser("faithfulness", help="collector time vs compiled-program time vs Inductor autotune")
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help="comma-separated MxNxK (bf16, x @ W^T)")
    p.add_argument(
        "--shapes-file",
        help="CSV of problems in `collect`'s format (M,N,K and optional op,dtype,layout,batch,model, "
        "out_dtype,scaling,fast_accum: fp8 scaled_mm too), instead of --shapes",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        help="with --shapes-file: this many of its problems, evenly spread over the file (0 = all)",
    )
    p.add_argument("--per-template", type=int, default=3)
    p.add_argument(
        "--large-per-template", type=int, default=0, help="also each tile template's N largest EXHAUSTIVE output tiles"
    )
    p.add_argument("--out", required=True, help="directory for faithfulness.csv and summary.json")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.shapes_file:
        problems = spread_sample(read_shapes_csv(args.shapes_file), args.sample)
    else:
        if args.sample:
            raise ValueError("--sample takes its problems from --shapes-file")
        problems = bf16_problems([s.strip() for s in args.shapes.split(",") if s.strip()])
    console = Console.of(args)
    summary = measure_faithfulness(
        problems, args.out, args.per_template, args.large_per_template, log=console.log, progress=console.progress
    )
    print(json.dumps(summary, indent=2))
    return 0
