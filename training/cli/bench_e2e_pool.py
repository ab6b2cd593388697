"""`kselect bench e2e-pool`: every process of several `bench e2e` runs, pooled
(training/bench/e2e_pooled.py pools them and says how sure each comparison is)."""

from __future__ import annotations

from kselect.training.bench.e2e_pooled import pool_e2e_runs
from kselect.training.cli.output import invocation


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "e2e-pool", help="pool the processes of several `bench e2e` runs: medians, targets, how sure"
    )
    p.add_argument("results", nargs="+", help="bench e2e results.json files, or the folders holding them")
    p.add_argument(
        "--variants",
        default="",
        help="comma-separated: pool only these variants (default: all), e.g. to leave out one "
        "whose code changed between the runs",
    )
    p.add_argument("--out", required=True, help="folder for README.md and results.json")
    p.set_defaults(func=run)


def run(args) -> int:
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    report = pool_e2e_runs(args.results, args.out, variants, invocation(args))
    print(
        f"pooled {report['processes']} processes from {len(report['sources'])} files into "
        f"{len(report['setups'])} setups; wrote {args.out}/README.md, results.json"
    )
    return 0
