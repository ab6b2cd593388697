"""`kselect export-measured-picks`: a card's datasets, and verify's decisions in its bench runs, as
a table of measured picks (the fastest candidate per GEMM where it beat ATen beyond noise, else
ATen), in kselect's form and Inductor's lookup-table form."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    from kselect.training.data.measured_picks import MIN_GAIN

    p = sub.add_parser("export-measured-picks", help="write a card's measured picks per GEMM from its datasets")
    p.add_argument(
        "--data", action="append", required=True, help="a dataset directory of the card (repeat for several)"
    )
    p.add_argument(
        "--out", required=True, help="path stem: writes STEM.json (kselect's) and STEM.lookup.json (Inductor's)"
    )
    p.add_argument(
        "--min-gain",
        type=float,
        default=MIN_GAIN,
        help=f"a template replaces ATen only when faster by more than this fraction and both spreads (default {MIN_GAIN})",
    )
    p.add_argument(
        "--bench",
        action="append",
        default=[],
        help="a `kselect bench gemm` run on the same card (its folder or results.jsonl; repeat to pool"
        " several): verify's decisions there add the GEMMs no dataset holds",
    )
    p.add_argument("--device-key", help="prefix Inductor's keys with this device name; default: device-agnostic keys")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.data.measured_picks import write_tables

    if not 0 <= args.min_gain < 1:
        raise ValueError(f"--min-gain must be in [0, 1), got {args.min_gain}")
    bench = None
    if args.bench:
        from kselect.training.bench.verified_picks import run_picks

        bench = run_picks(args.bench, min_gain=args.min_gain)
    summary = write_tables(args.data, args.out, min_gain=args.min_gain, device_key=args.device_key, bench=bench)
    text = (
        f"{summary['problems']} GEMMs ({summary['from_bench_runs']} from bench runs), "
        f"{summary['template_picks']} picked a template "
        f"(median gain over ATen {summary['median_template_gain']}): {', '.join(summary['out'])}"
    )
    print(json.dumps(summary, indent=2, sort_keys=True) if args.json else text)
    return 0
