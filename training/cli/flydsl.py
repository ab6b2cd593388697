"""`kselect flydsl compile`: compile-only FlyDSL GEMM candidates for gfx942/gfx950, with ISA stats.

Works on any machine with flydsl and ld.lld (no GPU): each candidate compiles in its own
subprocess, results come from / go to the FlyDSL compile cache. `--json` prints one document.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys

from kselect.kernels.problem import Problem

_SHAPE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_shape(text: str) -> tuple[int, int, int]:
    m = _SHAPE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"--shape must look like 4096x4096x4096 (MxNxK), got {text!r}")
    return tuple(int(g) for g in m.groups())


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def add_parser(subparsers) -> None:
    from kselect.kernels.flydsl.params import ARCHS, DTYPES, LAYOUTS

    p = subparsers.add_parser("flydsl", help="compile FlyDSL GEMM candidates for gfx942/gfx950")
    sub = p.add_subparsers(dest="flydsl_command", metavar="ACTION", required=True)
    c = sub.add_parser("compile", help="compile-only every candidate of one GEMM; report status and ISA stats")
    c.add_argument("--arch", required=True, choices=ARCHS)
    c.add_argument("--shape", required=True, type=parse_shape, help="MxNxK, e.g. 4096x4096x4096")
    c.add_argument("--dtype", default="bf16", choices=DTYPES)
    c.add_argument(
        "--layout", default="nt", choices=LAYOUTS, help="nt: C = A @ B^T with B stored (N, K); nn: C = A @ B"
    )
    c.add_argument("--search-space", default="default", choices=("default", "exhaustive"))
    c.add_argument("--limit", type=_positive, default=None, help="compile only the first N candidates")
    c.add_argument("--workers", type=_positive, default=None, help="parallel compiles (default KSELECT_FLYDSL_WORKERS)")
    c.add_argument("--no-cache", action="store_true", help="recompile even when cached")
    c.add_argument("--json", action="store_true", help="print one JSON document")
    c.set_defaults(func=run_compile)
    o = sub.add_parser("options", help="list the environment variables the FlyDSL backend reads")
    o.set_defaults(func=run_options)


def run_options(args) -> int:
    from kselect.kernels.flydsl import options

    print(options.describe())
    return 0


def run_compile(args) -> int:
    from kselect.kernels.flydsl import compile as fcompile
    from kselect.kernels.flydsl import space
    from kselect.kernels.flydsl.toolchain import ToolchainError, flydsl_version

    m, n, k = args.shape
    problem = Problem(m, n, k, dtype=args.dtype, layout=args.layout)
    explained = space.explain(problem, args.arch, args.search_space)
    cands = [c for c, why in explained if not why]
    chosen = cands[: args.limit] if args.limit else cands
    try:
        results = fcompile.compile_many(
            [space.kernel_params(c, problem) for c in chosen],
            args.arch,
            workers=args.workers,
            use_cache=not args.no_cache,
        )
        version = flydsl_version()
    except ToolchainError as exc:
        print(f"kselect: error: {exc}", file=sys.stderr)
        return 2
    rejected = collections.Counter(why[0].split(" ")[0] if why else "" for _, why in explained if why)
    status = collections.Counter(r.status for r in results)
    doc = {
        "arch": args.arch,
        "problem": problem.to_dict(),
        "problem_key": problem.key,
        "flydsl_version": version,
        "search_space": args.search_space,
        "space_size": len(explained),
        "valid": len(cands),
        "compiled": len(results),
        "status_counts": dict(status),
        "rejected_first_reason": dict(rejected.most_common()),
        "results": [
            dict(
                candidate=c.key,
                params=c.kwargs,
                status=r.status,
                reason=r.reason,
                compile_s=r.compile_s,
                wall_s=round(r.wall_s, 3),
                cached=r.cached,
                isa=r.isa.to_dict() if r.isa else None,
            )
            for c, r in zip(chosen, results)
        ],
    }
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(
            f"{problem.key} on {args.arch}: {len(cands)} valid of {len(explained)}, "
            f"compiled {len(results)}: {dict(status)}"
        )
        for row in doc["results"]:
            isa = row["isa"] or {}
            print(
                f"  {row['status']:8s} {row['candidate']:72s} "
                f"t={row['compile_s'] or 0:5.2f}s vgpr={isa.get('vgpr_count', '-')} "
                f"lds={isa.get('lds_bytes', '-')} mfma={isa.get('mfma', '-')} {row['reason']}"
            )
    return 0 if status.get("ok", 0) or not results else 1
