"""`kselect collect-grouped`: measure MoE grouped GEMMs (`_grouped_mm`) into a dataset."""

from __future__ import annotations

import json

SETS = ("moe-train", "moe-unseen")


def add_parser(sub) -> None:
    p = sub.add_parser("collect-grouped", help="measure Inductor's grouped-mm choices on MoE expert layers")
    p.add_argument("--set", default="moe-train", choices=SETS, help="the workload set (training/workloads/moe.py)")
    p.add_argument("--out", required=True, help="dataset directory (created or resumed)")
    p.add_argument(
        "--measure",
        default="inductor",
        choices=("inductor", "aten"),
        help="inductor: every choice of Inductor's lowering; aten: ATen's kernel alone, no compile",
    )
    p.add_argument("--shard", default="0/1", help="i/n: measure every n-th problem (by key) from i")
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop starting new problems after this")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: ATen on the host (tests)")
    p.add_argument(
        "--stock",
        action="store_true",
        help="also let Inductor autotune as stock does; record its pick and compile time (the bench's baseline)",
    )
    p.add_argument("--target-ms", type=float, default=0.25, help="GPU time per timed graph replay")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.measure import grouped_collect
    from kselect.training.workloads.moe import moe_training_problems, moe_unseen_problems

    problems = moe_training_problems() if args.set == "moe-train" else moe_unseen_problems()
    measure = grouped_collect.measure_inductor if args.measure == "inductor" else grouped_collect.measure_aten
    if args.stock and args.measure != "inductor":
        raise ValueError("--stock needs --measure inductor: stock's pick comes from Inductor's own autotuning")
    result = grouped_collect.collect_grouped(
        problems,
        args.out,
        measure=measure,
        device=args.device,
        target_ms=args.target_ms,
        workload=args.set,
        shard=args.shard,
        max_minutes=args.max_minutes,
        stock=args.stock,
    )
    print(json.dumps(result))
    return 0
