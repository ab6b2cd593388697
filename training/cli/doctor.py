"""`kselect doctor`: what kselect will do on this machine (selector/doctor.py); runtime only."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="what kselect will do here: card, model, versions, cache, what it decides")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--device", help="torch device to ask about (default: cuda when there is one, else cpu)")
    which.add_argument(
        "--fingerprint",
        metavar="FILE",
        help="ask about the card this file names instead, from any machine: a dataset's "
        "fingerprint.json or a model's .meta.json",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from kselect.selector.doctor import FingerprintFileError, card_fingerprint, diagnose

    try:
        card = card_fingerprint(args.fingerprint) if args.fingerprint else None
    except FingerprintFileError as exc:
        print(f"kselect doctor: {exc}", file=sys.stderr)
        return 2
    report = diagnose(args.device, fingerprint=card)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(report.lines()))
    return 0
