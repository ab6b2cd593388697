"""`kselect compile-cost`: measure Triton candidates' compile cost on this CPU (collect) and
fit the model verify uses to price a kept template's compile (fit)."""

from __future__ import annotations

import json

from kselect.training.cli.output import Console


def add_parser(sub) -> None:
    p = sub.add_parser("compile-cost", help="time Triton candidates' compiles for a GPU target; fit their model")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    c = verbs.add_parser("collect", help="compile every planned Triton candidate for --arch, on this CPU")
    c.add_argument("--out", required=True, help="directory of compile_times-*.csv (created or resumed)")
    c.add_argument("--arch", default="sm_90", help="CUDA target, sm_<capability> (default sm_90: H100/H200)")
    c.add_argument("--shard", default="0/1", help="i/n: compile every n-th plan (by plan id) starting at i")
    c.add_argument("--workers", type=int, default=0, help="compile children at once (default: one per core)")
    c.add_argument("--limit", type=int, default=0, help="compile at most this many plans (0 = all)")
    c.add_argument(
        "--repeat",
        type=int,
        default=0,
        help="pass number: a second pass (1) re-times plans already timed, for the noise",
    )
    c.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new compiles after this")
    c.set_defaults(func=run_collect)

    f = verbs.add_parser("fit", help="fit the compile-cost model on collected compile times")
    f.add_argument("--data", required=True, help="directory of compile_times-*.csv")
    f.add_argument("--out", required=True, help="model file to write (XGBoost JSON; card beside it)")
    f.add_argument("--folds", type=int, default=5, help="cross-validation folds for the card (default 5)")
    f.set_defaults(func=run_fit)


def run_collect(args) -> int:
    from kselect.training.compile_times.collect import collect_compile_costs

    console = Console.of(args)
    print(
        json.dumps(
            collect_compile_costs(
                args.out,
                args.arch,
                args.shard,
                args.workers,
                args.limit,
                args.repeat,
                args.max_minutes,
                log=console.log,
                progress=console.progress,
            )
        )
    )
    return 0


def run_fit(args) -> int:
    from kselect.training.compile_times.fit import fit_compile_cost

    print(json.dumps(fit_compile_cost(args.data, args.out, folds=args.folds, argv=args.argv), indent=1))
    return 0
