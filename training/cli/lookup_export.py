"""`kselect export-lookup-table`: kselect's decisions as Inductor's own template lookup table."""

from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("export-lookup-table", help="write kselect's decisions as Inductor's template lookup table")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--cache-dir", help="kselect's decision cache (enable(cache_dir=...))")
    src.add_argument("--shapes-file", help="CSV of mm/bmm shapes to rank with --model (predict mode)")
    p.add_argument("--model", help="cost model file ranking --shapes-file (e.g. models/h200-bf16.json)")
    p.add_argument(
        "--search-space",
        default="default",
        choices=("default", "exhaustive"),
        help="Inductor's GEMM search space the model ranks (--shapes-file)",
    )
    p.add_argument(
        "--aten-margin",
        type=float,
        default=None,
        help="--shapes-file: a template must out-score ATen by this many sd (enable()'s aten_margin)",
    )
    p.add_argument("--device", help="the device fingerprint id to export when the cache holds several")
    p.add_argument(
        "--device-key", help="prefix keys with this device name (Inductor's gcnArchName); default: device-agnostic keys"
    )
    p.add_argument("--out", required=True, help="the JSON table to write")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.data.lookup_table import export_from_cache, export_from_model, write_table

    if args.cache_dir:
        if args.model:
            raise ValueError("--model goes with --shapes-file, not --cache-dir")
        export = export_from_cache(args.cache_dir, device=args.device, device_key=args.device_key)
    else:
        from kselect.selector.model.cost_model import CostModel
        from kselect.training.workloads.shapes import read_shapes_csv

        if not args.model:
            raise ValueError("--shapes-file needs --model, the cost model that ranks its shapes")
        model = CostModel.load(args.model)
        export = export_from_model(
            read_shapes_csv(args.shapes_file),
            model,
            args.search_space,
            device_key=args.device_key,
            aten_margin=args.aten_margin,
        )
    path = write_table(export, args.out)
    summary = {**export.summary(), "out": str(path)}
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(
            f"wrote {summary['entries']} GEMMs ({summary['single_config_entries']} with one config: "
            f"nothing benchmarked) from {summary['source']} to {path}"
        )
        for reason, n in sorted(summary["skipped"].items()):
            print(f"  left out {n}: {reason}", file=sys.stderr)
        if export.conflicts:
            print(
                f"  {export.conflicts} GEMMs were decided more than once: kept the verified or newest", file=sys.stderr
            )
        print(
            "use: torch._inductor.config.lookup_table.table = json.load(open(PATH)) and install "
            "torch._inductor.lookup_table.LookupTableChoices as Inductor's choices handler"
        )
    return 0 if export.table else 1
