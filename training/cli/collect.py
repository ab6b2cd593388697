"""`kselect collect`: measure candidates of shapes on this machine's GPUs into a dataset."""

from __future__ import annotations

import json
import sys

from kselect.training.cli.flags import add_ray_args, add_shape_args, ray_collector, shapes_from_args
from kselect.training.cli.output import Console


def add_parser(sub) -> None:
    p = sub.add_parser("collect", help="measure every candidate of every shape on a GPU")
    add_shape_args(p)
    p.add_argument("--out", required=True, help="dataset directory (created or resumed)")
    p.add_argument("--backends", default="aten,triton", help="comma-separated backend names")
    p.add_argument(
        "--space",
        default="sample:240",
        help="exhaustive | default | sample:N (DEFAULT + seeded sample up to N per backend)",
    )
    p.add_argument("--shard", default="0/1", help="i/n: measure every n-th shape starting at i")
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new shapes after this")
    p.add_argument("--gpus", help="comma-separated GPU indices (default: all visible)")
    p.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="cpu: measure CPU backends with host timing (tests, debugging)",
    )
    p.add_argument("--target-ms", type=float, default=0.25, help="GPU time per timed graph replay")
    add_ray_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.kernels.backend import parse_backends
    from kselect.training.measure.collect import collect
    from kselect.training.measure.collect_plan import CollectError, parse_shard, parse_space

    parse_shard(args.shard)
    parse_space(args.space)
    backends = [b.name for b in parse_backends(args.backends)]
    on_ray = ray_collector(args, compact=True, log=Console.of(args).log)
    if on_ray is not None and (args.shard != "0/1" or args.gpus):
        raise CollectError("--ray splits the shapes over the cluster's GPUs itself: drop --shard and --gpus")
    problems, tags = shapes_from_args(args)
    common = dict(
        backends=backends,
        space=args.space,
        max_minutes=args.max_minutes,
        workloads=tags,
        target_ms=args.target_ms,
        device=args.device,
    )
    if on_ray is not None:
        result = on_ray(problems, args.out, **common)
    else:
        gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
        result = collect(problems, args.out, shard=args.shard, gpus=gpus, **common)
    print(json.dumps(result))
    if not result["ok"]:
        print(failure_summary(result), file=sys.stderr)
        return 1
    return 0


def failure_summary(result: dict) -> str:
    """What a collection left undone, for the user (the JSON line has the details)."""
    lines = [f"kselect collect: {result['shapes_complete']} of {result['problems']} shapes complete"]
    if result["shapes_failed"]:
        lines.append(
            f"  {len(result['shapes_failed'])} shape(s) failed before their first candidate "
            f"(recorded, skipped on rerun): {', '.join(result['shapes_failed'][:10])}"
        )
    for shard, why in result.get("shards_failed", {}).items():
        lines.append(f"  Ray gave shard {shard} up ({why}); rerun the same command to resume it")
    if result["shapes_lost"]:
        lines.append(
            f"  {len(result['shapes_lost'])} shape(s) not measured: the worker kept dying "
            f"({result['crashes']} crashes); rerun the same command to resume: "
            f"{', '.join(result['shapes_lost'][:10])}"
        )
    return "\n".join(lines)
