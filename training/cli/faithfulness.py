"""`kselect faithfulness`: collector time vs compiled-program time vs Inductor's autotune
number, per (shape, candidate), on this GPU (training/measure/faithfulness.py)."""

from __future__ import annotations

import json

from kselect.training.cli.output import Console
from kselect.training.measure.faithfulness import DEFAULT_SHAPES, measure_faithfulness


def add_parser(sub) -> None:
    p = sub.add_parser("faithfulness", help="collector time vs compiled-program time vs Inductor autotune")
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help="comma-separated MxNxK (bf16, x @ W^T)")
    p.add_argument("--per-template", type=int, default=3)
    p.add_argument(
        "--large-per-template", type=int, default=0, help="also each tile template's N largest EXHAUSTIVE output tiles"
    )
    p.add_argument("--out", required=True, help="directory for faithfulness.csv and summary.json")
    p.set_defaults(func=run)


def run(args) -> int:
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    console = Console.of(args)
    summary = measure_faithfulness(
        shapes, args.out, args.per_template, args.large_per_template, log=console.log, progress=console.progress
    )
    print(json.dumps(summary, indent=2))
    return 0
