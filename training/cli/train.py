"""`kselect train`: fit the cost model on a measured dataset, write model + sidecar + card.

    kselect train --data data/h200-bf16 --out models/h200-bf16 [--objective auto] [--cv-folds 5]

writes models/h200-bf16.json (XGBoost JSON), models/h200-bf16.meta.json (schema, device,
dataset hash, command, CV table) and models/h200-bf16.md (the model card). Several --data (one
per card) train one pooled model on all their rows (training/learn/pooled.py). With
`--feature-block epilogue` each dataset's GEMM + epilogue labels (DIR/epilogue_labels.jsonl,
training/data/epilogue_rows.py, from `kselect collect-epilogue`) join its bare rows, every row gets the epilogue columns, and the
sidecar declares the block. With `--feature-block scaled_mm` every row gets fp8 scaled_mm's
problem columns, and a dataset holding scaled_mm rows makes a model that holds scaled_mm (its
card's `ops` and `scalings`); without the block such a model never ranks scaled_mm.
"""

from __future__ import annotations

import time

from kselect.selector.model.cost_model import OBJECTIVES, meta_path
from kselect.training.cli.flags import add_feature_block_arg
from kselect.training.cli.output import Console, invocation
from kselect.training.learn.held_out import load_data
from kselect.training.learn.model_card import model_paths, save_trained
from kselect.training.learn.pooled import pool
from kselect.training.learn.train import DEFAULT_GRID, HEADROOM_GRID, MAX_ROWS_PER_SHAPE, train

GRIDS = {"default": DEFAULT_GRID, "single": DEFAULT_GRID[:1], "headroom": HEADROOM_GRID}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="train the gradient-boosted cost model", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--data",
        required=True,
        action="append",
        help="dataset directory (measurements.parquet + fingerprint.json); repeat it to train one model on "
        "several cards' datasets, each row featurised with its own card's fingerprint",
    )
    p.add_argument("--out", required=True, help="model path without suffix, e.g. models/h200-bf16")
    p.add_argument(
        "--objective",
        default="auto",
        choices=("auto",) + tuple(OBJECTIVES),
        help="auto = cross-validate every objective and keep the best (default)",
    )
    p.add_argument(
        "--cv-folds",
        type=int,
        default=5,
        help="folds for choosing objective/hyper-parameters "
        "(groups = model family when there are that many, else shape); 0 = no CV",
    )
    p.add_argument("--grid", choices=sorted(GRIDS), default="default", help="hyper-parameter grid")
    p.add_argument("--nthread", type=int, default=2, help="XGBoost threads (default 2)")
    p.add_argument(
        "--max-rows-per-shape",
        type=int,
        default=MAX_ROWS_PER_SHAPE,
        help="training rows kept per shape: all near the best + a sample of the rest",
    )
    p.add_argument(
        "--dtypes",
        help="comma-separated dtypes the model decides (its sidecar's `dtypes`), a subset of its data's; "
        "default: every dtype its data holds. The others stay with whichever model, or stock, decides them",
    )
    p.add_argument(
        "--predict-dtypes",
        help="comma-separated dtypes, of those it decides, that predict mode may take a template for (its "
        "sidecar's `predict_dtypes`); default: all. For the others predict keeps cuBLAS, plain's kernel, "
        "and verify decides as usual -- for a dtype whose held-out predict capture is below zero",
    )
    add_feature_block_arg(
        p,
        "train with an optional feature block; epilogue: each dataset's epilogue_labels.jsonl "
        "(GEMM + epilogue compiled whole per pinned candidate) joins its rows; scaled_mm: fp8 "
        "scaled_mm's problem columns, which a model must have to rank scaled_mm",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    t0 = time.perf_counter()
    blocks = tuple(dict.fromkeys(args.feature_block))
    parts = [load_data(d) for d in args.data]
    if "epilogue" in blocks:
        from kselect.training.data.epilogue_rows import with_label_rows

        parts = with_label_rows(parts, args.data)
    df, fp = parts[0] if len(parts) == 1 else pool(parts)
    held = data_dtypes(df)
    serve = served_dtypes(held, args.dtypes)
    predict = predicted_dtypes(serve or held, args.predict_dtypes)
    console = Console.of(args)
    model, card = train(
        df,
        fp,
        objective=args.objective,
        cv_folds=args.cv_folds,
        grid=GRIDS[args.grid],
        nthread=args.nthread,
        max_rows=args.max_rows_per_shape,
        log=console.log,
        progress=console.progress,
        blocks=blocks,
    )
    if serve:  # the dtypes it decides; its data's stay on record
        card = {**card, "dtypes": serve, "data_dtypes": card.get("dtypes") or ["bf16"]}
    if predict is not None:
        card = {**card, "predict_dtypes": predict}
    model_path, card_path = model_paths(args.out)
    data = args.data[0] if len(args.data) == 1 else args.data
    save_trained(model, card, fp, data, model_path, invocation(args), card_path)
    console.log(f"wrote {model_path}, {meta_path(model_path)}, {card_path} in {time.perf_counter() - t0:.1f} s")
    return 0


def data_dtypes(df) -> list[str]:
    """The dtypes of the training rows, sorted."""
    return sorted(map(str, df["dtype"].astype(str).unique()))


def _named(dtypes: str) -> list[str]:
    """A flag's comma-separated dtypes, sorted, each once."""
    return sorted(dict.fromkeys(d.strip() for d in dtypes.split(",") if d.strip()))


def served_dtypes(data: list[str], dtypes: str | None) -> list[str] | None:
    """The dtypes --dtypes names, checked against the rows' (`data`) before any training: a
    ValueError names a dtype the data lacks. None: every dtype of the data."""
    if not dtypes:
        return None
    chosen = _named(dtypes)
    missing = sorted(set(chosen) - set(data))
    if not chosen or missing:
        raise ValueError(f"--dtypes {dtypes!r} names dtype(s) {missing} the data lacks (it holds {data})")
    return chosen


def predicted_dtypes(decided: list[str], dtypes: str | None) -> list[str] | None:
    """The dtypes --predict-dtypes names, checked to be among those the model decides (a
    ValueError names any other). None: predict may take a template for every one."""
    if dtypes is None:
        return None
    chosen = _named(dtypes)
    stray = sorted(set(chosen) - set(decided))
    if stray:
        raise ValueError(f"--predict-dtypes {dtypes!r} names dtype(s) {stray} the model does not decide ({decided})")
    return chosen
