"""`kselect bench gemm-pool`: the rows of several `bench gemm` runs as one report
(training/bench/gemm_pooled.py pools them)."""

from __future__ import annotations

from kselect.training.bench.gemm_pooled import pool_gemm_runs
from kselect.training.cli.output import invocation


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "gemm-pool", help="several `bench gemm` runs as one report: each shape at its median over runs"
    )
    p.add_argument("results", nargs="+", help="bench gemm results.jsonl files, or the folders holding them")
    p.add_argument("--out", required=True, help="folder for README.md, summary.json and results.jsonl")
    p.set_defaults(func=run)


def run(args) -> int:
    rows, sources = pool_gemm_runs(args.results, args.out, invocation(args))
    print(f"pooled {rows} rows from {len(sources)} runs; wrote {args.out}/README.md, summary.json, results.jsonl")
    return 0
