"""`kselect grouped-eval`: fit the grouped-GEMM model on one dataset and score its picks on an
unseen one against plain torch.compile and stock max-autotune (docs/grouped-mm.md)."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("grouped-eval", help="fit the grouped-GEMM model; score its picks on unseen MoE shapes")
    p.add_argument("--train", required=True, help="dataset directory of `kselect collect-grouped --set moe-train`")
    p.add_argument("--unseen", required=True, help="dataset directory of `... --set moe-unseen --stock`")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.data.dataset import DatasetDir, load_dataset
    from kselect.training.learn.grouped import evaluate
    from kselect.training.measure.grouped import load_stock_picks

    result = evaluate(
        load_dataset(args.train),
        load_dataset(args.unseen),
        DatasetDir(args.train).read_fingerprint(),
        load_stock_picks(args.unseen),
        args.seed,
    )
    print(json.dumps(result, indent=1))
    return 1 if result["slower_than_plain"] else 0
