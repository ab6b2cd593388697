"""`kselect report`: the held-out evaluation as Markdown + PNG plots + JSON.

    kselect report --data data/h200-bf16 --model models/h200-bf16.json --out reports/2026-12-05-cost-model-h200-bf16/

writes report.md, evaluation.json, pct_of_oracle_vs_k.png, regret_cdf.png and
predicted_vs_measured.png; with --update-card it also stores the held-out summary in the
model's sidecar and re-renders its card; with --bench it times ranking one GEMM's space.
"""

from __future__ import annotations

from pathlib import Path

from kselect.training.cli.flags import add_data_model_args, data_and_model
from kselect.training.cli.output import Console, invocation
from kselect.training.learn.report import write_report


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="write an accuracy report with plots", description=__doc__.split("\n\n")[0]
    )
    add_data_model_args(p)
    p.add_argument("--out", required=True, help="report directory, e.g. reports/2026-12-05-cost-model-h200-bf16/")
    p.add_argument("--update-card", action="store_true", help="store held-out metrics in the model card")
    p.add_argument("--bench", action="store_true", help="also time ranking 4096^3's full space on 1 core")
    p.set_defaults(func=main)


def main(args) -> int:
    df, fp, model = data_and_model(args)
    out = Path(args.out)
    console = Console.of(args)
    write_report(
        out,
        args.data,
        df,
        fp,
        model,
        Path(args.model),
        args.folds,
        invocation(args),
        bench=args.bench,
        update_model_card=args.update_card,
        log=console.log,
        progress=console.progress,
    )
    console.log(f"wrote {out}/report.md, evaluation.json and the plots")
    return 0
