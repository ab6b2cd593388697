"""`kselect dataset summary|headroom|compact|probe-aten`: inspect and maintain a measured dataset."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.data.dataset import DatasetDir, DatasetError, summarize


def add_parser(sub) -> None:
    p = sub.add_parser("dataset", help="summarise, validate and compact a measured dataset")
    ds = p.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    s = ds.add_parser("summary", help="counts, coverage and fingerprint of a dataset")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=run_summary)
    h = ds.add_parser(
        "headroom",
        help="the headroom over ATen before any model: per op kind (an fp8 scaled_mm's scaling apart) "
        "and M class, the best measured candidate against ATen; wrong results counted per template",
    )
    h.add_argument("path")
    h.add_argument("--json", action="store_true", help="print one JSON object")
    h.set_defaults(func=run_headroom)
    c = ds.add_parser("compact", help="fold part files into measurements.parquet")
    c.add_argument("path")
    c.set_defaults(func=run_compact)
    a = ds.add_parser(
        "probe-aten",
        help="record what ATen (cuBLAS) launches for each problem of a dataset (CUDA GPU; the cost "
        "model's ATen-kernel columns), into DIR/aten_kernels.jsonl",
    )
    a.add_argument("path")
    a.add_argument("--missing-only", action="store_true", help="probe only problems without a record")
    a.set_defaults(func=run_probe_aten)


def _require(path: str) -> Path:
    root = Path(path)
    if not root.exists():
        raise DatasetError(f"dataset directory {root} does not exist")
    if not DatasetDir(root).exists():
        raise DatasetError(f"{root} holds no measurements (no measurements.parquet or parts/*.parquet)")
    return root


def run_summary(args) -> int:
    summary = summarize(_require(args.path))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 0
    fp = summary["fingerprint"]
    print(
        f"{summary['path']}: {summary['shapes']} shapes, {summary['rows']} rows "
        f"({summary['failed_rows']} failed, {summary['noisy_rows']} noisy)"
    )
    print(
        f"  candidates per shape: min {summary['candidates_per_shape_min']}, "
        f"median {summary['candidates_per_shape_median']:.0f}; oracle shapes {summary['oracle_shapes']}"
    )
    if summary["oracle_shapes"]:
        gap = summary["sample_gap"]["all"]
        print(
            f"  oracle shapes by M class: {summary['oracle_shapes_by_class']}; best of sample:"
            f"{summary['sample_gap']['n_sample']} vs the whole space: geomean {gap['geomean']:.2%}, "
            f"max {gap['max']:.2%}, over 1 % on {gap['over_1pct']} of {gap['shapes']}"
        )
    print(f"  templates: {summary['by_template']}")
    print(f"  workloads: {summary['workloads']}")
    print(
        f"  measured on: {fp.get('gpu_name')} ({fp.get('sm_count')} SMs), torch {fp.get('torch_version')}, "
        f"triton {fp.get('triton_version')}, CUDA {fp.get('cuda_version')}"
    )
    if summary["retimed"]:
        r = summary["retimed"]
        print(
            f"  re-timed as Inductor's kernels ({r['path']}): {r['ok_rows']} of {r['rows']} rows timed, "
            f"{r['shapes_with_ok_rows']} of {r['shapes']} shapes; training folds them into the labels"
        )
    if summary["corrupt_files"]:
        print(f"  CORRUPT part files skipped: {summary['corrupt_files']}")
    return 0


def run_headroom(args) -> int:
    from kselect.training.learn.dataset_headroom import headroom_before_training, headroom_text

    summary = headroom_before_training(DatasetDir(_require(args.path)).load())
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"{args.path}:")
        print(headroom_text(summary))
    return 0


def run_compact(args) -> int:
    from kselect.training.data.oracle import mark_oracle

    rows = DatasetDir(_require(args.path)).compact(transform=mark_oracle)
    print(f"{args.path}: {rows} rows in measurements.parquet (oracle flag recomputed from coverage)")
    return 0


def run_probe_aten(args) -> int:
    import sys

    from kselect.kernels.aten.launched import ProbeError
    from kselect.training.data.aten_kernels import probe_dataset

    root = _require(args.path)
    try:
        got = probe_dataset(root, missing_only=args.missing_only)
    except ProbeError as exc:
        print(f"kselect: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{args.path}: probed {got['probed']} problems ({got['failed']} failed); {got['records']} records in {got['file']}"
    )
    return 0 if got["failed"] == 0 else 1
