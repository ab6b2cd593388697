"""`kselect bench gemm-pool`: the rows of several `bench gemm` runs as one report.

Stock DEFAULT's pick for a shape varies between processes: the 30-shape bench put verify's
kernels 1.079x ahead of DEFAULT's picks in one run (reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels) and 1.024x in another
(reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun), with verify itself at 0.993-0.994x of cuBLAS in both. One run of DEFAULT is one
draw. Pooling runs (or `bench gemm --repeats`) gives each (variant, shape) the median over
its processes (gemm_summary.combine_repeats) and the report and targets on those medians.

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

from kselect.training.bench.gemm_report import write_report
from kselect.training.bench.gemm_summary import summarize
from kselect.training.bench.pooling import PoolError, read_results

_SAME = ("device_name", "torch", "triton")


def load(paths) -> tuple[list[dict], dict]:
    """Every row of the given runs (tagged with its file) and their common environment."""
    rows, env, env_from, codes = [], None, None, {}
    for given in paths:
        path, text = read_results(given, "results.jsonl")
        lines = text.splitlines()
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
    env["kselect_code"] = ", ".join(
        f"{c} ({len(files)} run{'s' if len(files) > 1 else ''})" for c, files in sorted(codes.items())
    )
    if len(codes) > 1:  # e.g. DEFAULT's repeats beside one kselect run: fine; kselect of two codes: not
        env["kselect_code"] += " -- mixed: pool kselect variants of one code only"
    return rows, env


def pool_gemm_runs(results: list[str], out: str | Path, command: str) -> tuple[int, list[str]]:
    """Pool the rows of the given runs into `out` (results.jsonl, summary.json, README.md);
    returns the number of rows and the files they came from."""
    rows, env = load(results)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_report(out, rows, summarize(rows), command, env)
    sources = sorted({r["source"] for r in rows})
    with open(out / "README.md", "a") as fh:
        fh.write("\nPooled from:\n\n" + "".join(f"- `{s}`\n" for s in sources))
    return len(rows), sources
