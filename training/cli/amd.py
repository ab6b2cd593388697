"""`kselect amd`: train and evaluate the AMD backend-winner model over tuned-GEMM tables.

    kselect amd train --tables DIR --out models/amd-backend-winner
    kselect amd evaluate --tables DIR --model models/amd-backend-winner.json [--json] [--nested]

`evaluate` scores the given model on every row of DIR (in-sample when DIR trained it) and,
when DIR holds several tables, re-trains with the model's own hyper-parameters and recipe
leaving each table out in turn (held-out numbers). Both are printed, labelled by scope.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kselect.training.amd import classifier
from kselect.training.amd.confusion_plot import plot_confusion
from kselect.training.amd.evaluation import NESTED_GRID, Evaluation, evaluate_in_sample, leave_one_table_out
from kselect.training.amd.label_noise import label_noise_summary
from kselect.training.amd.recipe import Recipe
from kselect.training.amd.tables import file_sha256, load_tables, table_files

IN_SAMPLE_SCOPE = (
    "the given model scored on every row of --tables (in-sample if these "
    "tables trained it); baselines fitted on the same rows (majority: "
    "in-sample; nearest_shape: each row's own entry left out)"
)
NESTED_SCOPE = (
    "held out, nested: as leave_one_table_out, but for each held-out table "
    "the recipe and hyper-parameters are chosen among amd_winner.NESTED_GRID "
    "by grouped-by-table CV over the other tables only (per_table[].chosen)"
)
LOTO_SCOPE = (
    "held out: for each table, a fresh model with the given model's "
    "hyper-parameters and recipe (and each baseline) is trained on the other "
    "tables and scored on it; every held-out row pooled"
)


def add_parser(subparsers) -> None:
    amd = subparsers.add_parser(
        "amd",
        help="AMD backend-winner model over tuned-GEMM tables",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = amd.add_subparsers(dest="amd_command", metavar="ACTION")

    train = sub.add_parser("train", help="fit the classifier on a directory of tables")
    train.add_argument("--tables", required=True, type=Path, help="directory of *.csv tables")
    train.add_argument(
        "--out", required=True, type=Path, help="output stem: writes STEM.json (XGBoost) and STEM.meta.json"
    )
    train.add_argument(
        "--near-tie-tolerance",
        type=float,
        default=0.05,
        help="split near-tied rows across their backends (default 0.05)",
    )
    train.add_argument("--no-near-ties", action="store_true", help="train on the recorded winner only")
    train.add_argument(
        "--no-balance-tables", action="store_true", help="weight every row equally instead of every table"
    )
    train.add_argument(
        "--keep-untimed", action="store_true", help="also train on rows whose time is 0 (untuned defaults)"
    )
    for name, kind, default in (
        ("n-estimators", int, 60),
        ("max-depth", int, 4),
        ("learning-rate", float, 0.1),
        ("colsample-bytree", float, 0.6),
        ("reg-lambda", float, 5.0),
    ):
        train.add_argument(f"--{name}", type=kind, default=default, help=f"default {default}")
    train.set_defaults(func=_train)

    ev = sub.add_parser("evaluate", help="accuracy vs baselines, in-sample and held-out")
    ev.add_argument("--tables", required=True, type=Path, help="directory of *.csv tables")
    ev.add_argument("--model", required=True, type=Path, help="STEM.json written by train")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument(
        "--tolerance", type=float, default=0.05, help="near-tie tolerance of the within_tolerance metric (default 0.05)"
    )
    ev.add_argument("--no-loto", action="store_true", help="skip leave-one-table-out")
    ev.add_argument("--keep-untimed", action="store_true", help="also score rows whose time is 0 (untuned defaults)")
    ev.add_argument("--plot", type=Path, help="write the held-out confusion matrix PNG here")
    ev.add_argument(
        "--nested",
        action="store_true",
        help="also run leave-one-table-out with the recipe and hyper-parameters "
        "chosen per held-out table by grouped CV over the other tables "
        "(NESTED_GRID of training/amd/evaluation.py; a few minutes)",
    )
    ev.add_argument("--inner-folds", type=int, default=3, help="grouped-by-table inner folds of --nested (default 3)")
    ev.set_defaults(func=_evaluate)
    amd.set_defaults(func=lambda args: (amd.print_help(), 2)[1])


def _train(args) -> int:
    if args.near_tie_tolerance < 0:
        raise ValueError(f"--near-tie-tolerance must be >= 0, got {args.near_tie_tolerance}")
    started = time.perf_counter()
    frame = load_tables(args.tables, measured_only=not args.keep_untimed)
    recipe = Recipe(None if args.no_near_ties else args.near_tie_tolerance, not args.no_balance_tables)
    params = {
        "n_estimators": args.n_estimators,
        "max_depth": args.max_depth,
        "learning_rate": args.learning_rate,
        "colsample_bytree": args.colsample_bytree,
        "reg_lambda": args.reg_lambda,
    }
    model = classifier.train(frame, recipe, **params)
    tables = [
        {"name": p.name, "sha256": file_sha256(p), "rows_used": int((frame["table"] == p.name).sum())}
        for p in table_files(args.tables)
    ]
    extra = {
        "recipe": recipe.to_dict(),
        "measured_only": not args.keep_untimed,
        "tables": tables,
        "training_rows": int(len(frame)),
    }
    model_path, meta_path = model.save(args.out, extra)
    seconds = time.perf_counter() - started
    print(
        f"trained on {len(frame)} rows from {len(tables)} tables in {seconds:.1f}s; classes {', '.join(model.classes_)}"
    )
    print(f"wrote {model_path} and {meta_path}")
    return 0


def _brief(result: dict) -> dict:
    return {k: result[k] for k in ("n", "accuracy", "top2", "within_tolerance") if k in result}


def _section(evaluation: Evaluation, scope: str) -> dict:
    out = {"scope": scope, **evaluation.model}
    out["baselines"] = {name: m["accuracy"] for name, m in evaluation.baselines.items()}
    out["baselines_detail"] = {name: _brief(m) for name, m in evaluation.baselines.items()}
    if evaluation.per_table:
        out["per_table"] = evaluation.per_table
    if evaluation.per_arch:
        out["per_arch"] = evaluation.per_arch
    return out


def _evaluate(args) -> int:
    if args.tolerance < 0:
        raise ValueError(f"--tolerance must be >= 0, got {args.tolerance}")
    if args.inner_folds < 2:
        raise ValueError(f"--inner-folds must be >= 2, got {args.inner_folds}")
    model = classifier.BackendWinnerClassifier.load(args.model)
    frame = load_tables(args.tables, measured_only=not args.keep_untimed)
    report = {
        "model": str(args.model),
        "tables_dir": str(args.tables),
        "tables": sorted(frame["table"].unique()),
        "tolerance": args.tolerance,
        "measured_only": not args.keep_untimed,
    }
    report.update(_section(evaluate_in_sample(model, frame, args.tolerance), IN_SAMPLE_SCOPE))
    held = None
    if frame["table"].nunique() > 1 and not args.no_loto:
        meta = model.meta_
        recipe = Recipe(**meta.get("recipe", {}))
        params = {k: v for k, v in meta["params"].items()}
        held = leave_one_table_out(frame, recipe, params, args.tolerance)
        report["leave_one_table_out"] = _section(held, LOTO_SCOPE)
        if args.nested:
            nested = leave_one_table_out(
                frame, recipe, params, args.tolerance, candidates=NESTED_GRID, inner_folds=args.inner_folds
            )
            report["leave_one_table_out_nested"] = _section(nested, NESTED_SCOPE)
    report["label_noise"] = label_noise_summary(frame, args.tolerance)
    if args.plot is not None:
        source = held.model if held is not None else report
        plot_confusion(source, args.plot, "held-out (leave one table out)" if held is not None else "in-sample")
    if args.json:
        print(json.dumps(report, sort_keys=False))
    else:
        _print_human(report)
    return 0


def _pct(x) -> str:
    return "  -  " if x is None else f"{100 * x:5.1f}"


def _print_human(report: dict, out=sys.stdout) -> None:
    def block(title: str, sec: dict) -> None:
        print(f"{title} (n={sec['n']}): {sec['scope']}", file=out)
        print(f"  {'':16} top1%  top2%  within{100 * report['tolerance']:.0f}%", file=out)
        rows = [("model", _brief(sec))] + list(sec["baselines_detail"].items())
        for name, m in rows:
            print(f"  {name:16} {_pct(m['accuracy'])}  {_pct(m['top2'])}  {_pct(m.get('within_tolerance'))}", file=out)
        # one line per architecture, then per table: the same columns, named by its own key
        parts = [(a["arch"], a) for a in sec.get("per_arch", [])] + [(t["table"], t) for t in sec.get("per_table", [])]
        for name, part in parts:
            print(
                f"    {name:34} n={part['n']:4}  model {_pct(part['model']['accuracy'])} "
                f"/{_pct(part['model']['top2'])}  majority {_pct(part['majority']['accuracy'])}"
                f"  nearest {_pct(part['nearest_shape']['accuracy'])}",
                file=out,
            )

    block("in-sample", report)
    if "leave_one_table_out" in report:
        block("leave-one-table-out", report["leave_one_table_out"])
    if "leave_one_table_out_nested" in report:
        block("leave-one-table-out, nested selection", report["leave_one_table_out_nested"])
    noise = report.get("label_noise")
    if noise:
        nb = noise["series_neighbours"]
        print(
            f"label noise (n={noise['rows']}): {noise['rows_provably_not_fastest']} rows "
            f"provably not the fastest, {noise['rows_with_near_tie']} with a near-tie "
            f"within {100 * noise['tolerance']:.0f}%; the M-neighbour in the same series "
            f"has the same winner for {_pct(nb['nearest']).strip()}% (either neighbour "
            f"{_pct(nb['either']).strip()}%)",
            file=out,
        )
