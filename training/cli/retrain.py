"""`kselect retrain`: a cost model for a new GPU in one resumable command (training/learn/retrain.py)."""

from __future__ import annotations

import json

from kselect.training.cli.flags import add_ray_args, ray_collector
from kselect.training.cli.output import Console
from kselect.training.learn.retrain import RetrainPlan, run


def add_parser(sub) -> None:
    p = sub.add_parser("retrain", help="shapes, collection, training and evaluation for a new GPU, resumable")
    p.add_argument("--out", required=True, help="run directory (created, or resumed with the same flags)")
    p.add_argument("--gpu-minutes", type=float, default=60.0, help="GPU time for collection (default 60)")
    p.add_argument("--sample-shapes", type=int, default=160, help="shapes measured over sample:200")
    p.add_argument("--full-shapes", type=int, default=24, help="shapes measured over their whole space")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--nthread", type=int, default=2, help="CPU threads for training and evaluation")
    p.add_argument("--folds", type=int, default=5, help="GroupKFold-by-shape folds of the evaluation")
    p.add_argument("--cv-folds", type=int, default=5, help="training's folds for objective and hyper-parameters")
    p.add_argument("--name", default="model", help="model file name inside --out (name.json, .meta.json, .md)")
    p.add_argument(
        "--dtypes",
        default="bf16",
        help="comma-separated dtypes the shapes are dealt to in turn (bf16, fp16, fp32, tf32: fp32 "
        "operands multiplied in TF32); one model holds them all (default bf16)",
    )
    add_ray_args(p)
    p.set_defaults(func=main)


def main(args) -> int:
    plan = RetrainPlan(
        out=args.out,
        gpu_minutes=args.gpu_minutes,
        sample_shapes=args.sample_shapes,
        full_shapes=args.full_shapes,
        seed=args.seed,
        nthread=args.nthread,
        folds=args.folds,
        cv_folds=args.cv_folds,
        name=args.name,
        dtypes=[d.strip() for d in args.dtypes.split(",") if d.strip()],
    )
    console = Console.of(args)
    # on Ray the collection stages leave compaction to the pipeline's own stage
    on_ray = ray_collector(args, compact=False, log=console.log)
    state = run(plan, log=console.log, progress=console.progress, collect_fn=on_ray)
    print(json.dumps(state["done"], sort_keys=True))
    return 0
