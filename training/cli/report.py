"""`kselect report`: the held-out evaluation as Markdown + PNG plots + JSON.

    kselect report --data data/h200-bf16 --model models/h200-bf16.json --out reports/2026-12-05-cost-model-h200-bf16/

writes report.md, evaluation.json, pct_of_oracle_vs_k.png, regret_cdf.png and
predicted_vs_measured.png; with --update-card it also stores the held-out summary in the
model's sidecar and re-renders its card; with --bench it times ranking one GEMM's space.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from kselect.selector.model.cost_model import CostModel

from kselect.training.learn.evaluation import load_data
from kselect.training.learn.report import write_report


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="write an accuracy report with plots",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True, help="report directory, e.g. reports/2026-12-05-cost-model-h200-bf16/")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--force", action="store_true", help="use a model trained for another device")
    p.add_argument("--update-card", action="store_true", help="store held-out metrics in the model card")
    p.add_argument("--bench", action="store_true", help="also time ranking 4096^3's full space on 1 core")
    p.set_defaults(func=main)


def main(args) -> int:
    df, fp = load_data(args.data)
    model = CostModel.load(args.model, fingerprint=fp, force=args.force)
    out = Path(args.out)
    write_report(out, args.data, df, fp, model, Path(args.model), args.folds,
                 "kselect report " + " ".join(shlex.quote(a) for a in sys.argv[2:]), bench=args.bench,
                 update_model_card=args.update_card, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"wrote {out}/report.md, evaluation.json and the plots", file=sys.stderr)
    return 0
