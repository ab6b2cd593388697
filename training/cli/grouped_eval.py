"""`kselect grouped-eval`: fit the grouped-GEMM model on one dataset, score its picks on an
unseen one against plain torch.compile and stock max-autotune (docs/grouped-mm.md), and with
`--out` save it as the model the selector serves (training/learn/grouped_artifact.py)."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("grouped-eval", help="fit the grouped-GEMM model; score its picks on unseen MoE shapes")
    p.add_argument("--train", required=True, help="dataset directory of `kselect collect-grouped --set moe-train`")
    p.add_argument("--unseen", required=True, help="dataset directory of `... --set moe-unseen --stock`")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trees", type=int, default=300, help="boosting rounds (default 300)")
    p.add_argument(
        "--out",
        help="save the fitted model as OUT.json + OUT.meta.json and its card OUT.md "
        "(the selector serves it beside the card's cost model, e.g. models/h100-grouped)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    import time

    from kselect.training.cli.output import invocation
    from kselect.training.data.dataset import DatasetDir, load_dataset
    from kselect.training.learn.grouped_artifact import save_grouped_model, training_card
    from kselect.training.learn.grouped_fit import evaluate, fit, measured
    from kselect.training.measure.grouped_collect import load_stock_picks

    train, device = load_dataset(args.train), DatasetDir(args.train).read_fingerprint()
    rows = measured(train)
    started = time.perf_counter()
    model = fit(rows, device, args.seed, args.trees)
    seconds = time.perf_counter() - started
    result = evaluate(train, load_dataset(args.unseen), device, load_stock_picks(args.unseen), model=model)
    if args.out:
        card = {**training_card(rows, args.trees, args.seed, seconds), "dtypes": sorted(set(rows["dtype"]))}
        result["model"] = str(save_grouped_model(model, args.out, args.train, device, card, result, invocation(args)))
    print(json.dumps(result, indent=1))
    return 1 if result["slower_than_plain"] else 0
