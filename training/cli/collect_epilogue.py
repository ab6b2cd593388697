"""`kselect collect-epilogue`: time GEMM + epilogue functions compiled whole, one pinned candidate
at a time, into a dataset's epilogue_labels.jsonl (what `kselect train --feature-block epilogue`
learns from)."""

from __future__ import annotations

import json

from kselect.training.workloads.epilogues import SETS


def add_parser(sub) -> None:
    p = sub.add_parser(
        "collect-epilogue",
        help="time GEMM + epilogue functions per pinned candidate into DIR/epilogue_labels.jsonl",
        description=__doc__,
    )
    p.add_argument("--set", default="llama3-8b", choices=SETS, help="the cases (training/workloads/epilogues.py)")
    p.add_argument(
        "--data",
        required=True,
        help="the dataset directory of this card's bare measurements; the labels join it (resumed per case)",
    )
    p.add_argument("--templates", type=int, default=8, help="Triton configs pinned per case besides ATen")
    p.add_argument(
        "--candidates",
        default="",
        help="comma-separated candidate keys to pin in every case instead (the CPU's: its ATen and C++ keys)",
    )
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--repeats", type=int, default=50, help="timed calls per compiled function (the median)")
    p.add_argument("--max-minutes", type=float, default=0.0, help="start no case after this long (rerun to go on)")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.measure.epilogue_labels import collect_epilogue_labels
    from kselect.training.workloads.epilogues import epilogue_cases

    # one process per dataset: the file is rewritten whole per case (resume by running it again)
    result = collect_epilogue_labels(
        epilogue_cases(args.set),
        args.data,
        args.device,
        templates=args.templates,
        candidates=[k for k in args.candidates.split(",") if k] or None,
        repeats=args.repeats,
        max_minutes=args.max_minutes,
    )
    print(json.dumps(result))
    return 0
