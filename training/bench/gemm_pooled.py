"""`kselect bench gemm-pool`: the rows of several `bench gemm` runs as one report.

Stock DEFAULT's pick for a shape varies between processes: the 30-shape bench put verify's
kernels 1.079x ahead of DEFAULT's picks in one run (reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels) and 1.024x in another
(reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun), with verify itself at 0.993-0.994x of cuBLAS in both. One run of DEFAULT is one
draw. Pooling runs (or `bench gemm --repeats`) gives each (variant, shape) the median over
its processes (bench_gemm.combine_repeats) and the report and targets on those medians.

    kselect bench gemm-pool reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels/callA/a/bench reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun/call3/z/gemm30 \\
        --out reports/2026-12-04-bench-gemm-h200-pooled

Runs pool only when they measured on the same GPU with the same torch and Triton (their
summary.json); anything else is a different experiment. The report names the kselect code of
each run (training/measure/provenance.py) and says when it is mixed: stock DEFAULT's repeats need not
share kselect's code, kselect variants should.
"""
from __future__ import annotations

import json
from pathlib import Path

from kselect.training.bench.gemm import summarize, write_report

_SAME = ("device_name", "torch", "triton")


class PoolError(ValueError):
    """A file `bench gemm-pool` cannot use; the message names it and why."""


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "gemm-pool", help="several `bench gemm` runs as one report: each shape at its median over runs")
    p.add_argument("results", nargs="+", help="bench gemm results.jsonl files, or the folders holding them")
    p.add_argument("--out", required=True, help="folder for README.md, summary.json and results.jsonl")
    p.set_defaults(func=run)


def load(paths) -> tuple[list[dict], dict]:
    """Every row of the given runs (tagged with its file) and their common environment."""
    rows, env, env_from, codes = [], None, None, {}
    for given in paths:
        path = Path(given)
        path = path / "results.jsonl" if path.is_dir() else path
        try:
            lines = path.read_text().splitlines()
        except FileNotFoundError:
            raise PoolError(f"{path}: no such file") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PoolError(f"{path}:{n}: not JSON ({exc})") from None
            if not isinstance(row, dict) or "variant" not in row or "problem" not in row:
                raise PoolError(f"{path}:{n}: not a `kselect bench gemm` row (no variant and problem)")
            rows.append({**row, "source": str(path)})
        summary = path.with_name("summary.json")
        mine = json.loads(summary.read_text()).get("environment", {}) if summary.exists() else {}
        codes.setdefault(mine.get("kselect_code") or "not recorded", []).append(str(path))
        if env is None:
            env, env_from = mine, path
        elif any(mine.get(k) != env.get(k) for k in _SAME if k in mine and k in env):
            diff = {k: (env.get(k), mine.get(k)) for k in _SAME if mine.get(k) != env.get(k)}
            raise PoolError(f"{path} was measured elsewhere than {env_from}: {diff}")
    env = dict(env or {})
    env["kselect_code"] = ", ".join(f"{c} ({len(files)} run{'s' if len(files) > 1 else ''})"
                                    for c, files in sorted(codes.items()))
    if len(codes) > 1:   # e.g. DEFAULT's repeats beside one kselect run: fine; kselect of two codes: not
        env["kselect_code"] += " -- mixed: pool kselect variants of one code only"
    return rows, env


def run(args) -> int:
    rows, env = load(args.results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    command = "kselect " + " ".join(getattr(args, "argv", []) or ["bench", "gemm-pool", *args.results])
    write_report(out, rows, summarize(rows), command, env)
    sources = sorted({r["source"] for r in rows})
    with open(out / "README.md", "a") as fh:
        fh.write("\nPooled from:\n\n" + "".join(f"- `{s}`\n" for s in sources))
    print(f"pooled {len(rows)} rows from {len(sources)} runs; wrote {out}/README.md, summary.json, results.jsonl")
    return 0
