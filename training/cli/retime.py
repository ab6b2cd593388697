"""`kselect retime`: time a dataset's fastest candidates and ATen as Inductor generates them,
into `<data>/retimed`, which training and evaluation then read as the labels (training/measure/retime.py)."""

from __future__ import annotations

import json

from kselect.training.measure.retime import TEMPLATES


def add_parser(sub) -> None:
    p = sub.add_parser(
        "retime", help="re-time a dataset's best candidates as Inductor's own kernels", description=__doc__
    )
    p.add_argument("--data", required=True, help="the collector's dataset directory")
    p.add_argument("--out", help="where the re-timed rows go (default: <data>/retimed)")
    p.add_argument(
        "--top", type=int, default=6, help="fastest Triton candidates per shape re-timed, besides ATen (default 6)"
    )
    p.add_argument(
        "--within",
        type=float,
        default=1.05,
        help="re-time a shape when its fastest Triton "
        "candidate was timed within this factor of ATen or faster (default 1.05)",
    )
    p.add_argument("--all-shapes", action="store_true", help="re-time every shape, whoever won")
    p.add_argument("--templates", default=",".join(TEMPLATES), help="Triton templates to re-time")
    p.add_argument("--shard", default="0/1", help="i/n: re-time every n-th qualifying shape from i")
    p.add_argument(
        "--max-shapes",
        type=int,
        default=0,
        help="at most this many shapes of this shard (most claimed Triton gain first; 0 = all)",
    )
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new shapes after this")
    p.add_argument("--gpus", help="comma-separated GPU indices (default: all visible)")
    p.add_argument(
        "--device", default="cuda", choices=("cuda", "cpu"), help="cpu: Inductor's CPU GEMM choices (tests, debugging)"
    )
    p.add_argument(
        "--summary", action="store_true", help="print how the re-timed rows move the labels (nothing is measured)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.measure.collect_plan import parse_shard
    from kselect.training.measure.retime import default_out, retime

    if args.summary:
        from kselect.training.data.dataset import load_dataset
        from kselect.training.data.labels import retime_summary

        print(
            json.dumps(
                retime_summary(load_dataset(args.data), load_dataset(args.out or default_out(args.data))), indent=1
            )
        )
        return 0
    parse_shard(args.shard)
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    templates = tuple(t.strip() for t in args.templates.split(",") if t.strip())
    result = retime(
        args.data,
        args.out,
        top=args.top,
        within=args.within,
        templates=templates,
        all_shapes=args.all_shapes,
        shard=args.shard,
        max_minutes=args.max_minutes,
        gpus=gpus,
        device=args.device,
        max_shapes=args.max_shapes,
    )
    print(json.dumps(result))
    return 0
