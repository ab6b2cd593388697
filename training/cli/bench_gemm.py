"""`kselect bench gemm`: per-GEMM tuning time and kernel speed, stock vs kselect
(training/bench/gemm.py runs it)."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.bench.common import policy_settings
from kselect.training.bench.gemm import bench_gemm
from kselect.training.bench.gemm_variants import VARIANTS
from kselect.training.cli.flags import add_policy_args, add_shape_args, shapes_from_args
from kselect.training.cli.output import Console, invocation


def add_parser(sub) -> None:
    p = sub.add_parser("gemm", help="per-GEMM tuning time and kernel speed: stock vs kselect")
    add_shape_args(p)
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated: {', '.join(VARIANTS)}")
    p.add_argument(
        "--exhaustive-shapes",
        type=int,
        default=3,
        help="stock EXHAUSTIVE on only the N shapes with the smallest space (-1 = all)",
    )
    add_policy_args(p)
    p.add_argument("--model", default="", help="cost-model booster (default: the shipped model)")
    p.add_argument("--device", default="cuda", help="cuda (real measurements) or cpu (pipeline check)")
    p.add_argument("--max-minutes", type=float, default=0.0, help="time budget; later work is skipped")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="processes per variant, in interleaved rounds (every other one reversed, "
        "EXHAUSTIVE last); a shape's numbers are their medians (stock DEFAULT's pick "
        "varies between processes)",
    )
    p.add_argument("--out", help="report directory (default reports/bench-gemm-<device>)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    problems, _ = shapes_from_args(args)
    out = Path(args.out or f"reports/bench-gemm-{'cpu' if args.device == 'cpu' else 'gpu'}")
    console = Console.of(args)
    summary = bench_gemm(
        problems,
        args.variants.split(","),
        out,
        device=args.device,
        model=args.model,
        exhaustive_shapes=args.exhaustive_shapes,
        max_minutes=args.max_minutes,
        repeats=args.repeats,
        policy=policy_settings(args),
        command=invocation(args),
        say=console.log,
        progress=console.progress,
    )
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print((out / "README.md").read_text())
    return 0
