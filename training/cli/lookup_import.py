"""`kselect import-lookup-table`: an Inductor lookup table's measured configs as dataset rows."""

from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("import-lookup-table", help="read an Inductor lookup table's timed configs into a dataset")
    p.add_argument("table", help="the JSON lookup table")
    p.add_argument("--out", required=True, help="dataset directory to append rows to")
    p.add_argument("--fingerprint-id", required=True, help="id of the device that measured the timings")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.data.lookup_table import NoTimings, import_table

    try:
        summary = import_table(args.table, args.out, args.fingerprint_id)
    except NoTimings as exc:
        print(f"kselect: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(f"imported {summary['imported']} measured configs into {args.out}")
        for reason, n in sorted(summary["skipped"].items()):
            print(f"  skipped {n}: {reason}", file=sys.stderr)
    return 0
