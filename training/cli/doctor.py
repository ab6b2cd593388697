"""`kselect doctor`: what kselect will do on this machine (selector/doctor.py); runtime only."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="what kselect will do here: card, model, versions, cache, what it decides")
    p.add_argument("--device", help="torch device to ask about (default: cuda when there is one, else cpu)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.selector.doctor import diagnose

    report = diagnose(args.device)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(report.lines()))
    return 0
