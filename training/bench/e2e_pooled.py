"""`kselect bench e2e-pool`: every process of several `bench e2e` runs, pooled.

A device call fits only a few processes per variant. Compile time spreads +-15 % between
processes of one variant and step time 1-3 %, more than the targets' margins. Pooling the
processes of every run with the same setup gives:
- medians over many processes;
- the targets judged on those medians (e2e_report.targets);
- for each comparison a target makes, the ratio of medians with a bootstrap 90 % interval,
  and a one-sided Mann-Whitney U p-value: how often two variants that do not differ show
  a gap this large;
- the same comparison within each run, and those runs' ratios combined. A run's processes
  share one host and one interleaving, while hosts differ by 20 % and more in compile speed
  (3.0 s against 3.7 s for the same one-layer compile). Pooled medians mix hosts in whatever
  proportions each run gave each variant; the per-run estimate compares like with like.
- the same comparison pair by pair: the variant's and its baseline's process of one round of
  one run. Per pair the ratio; over the pairs how often the variant
  was slower, a two-sided sign test, and the pairs split by which of the two ran first. A gap
  that follows the position, not the variant, shows there: in the runs up to reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive every
  round ran in one fixed order (training/bench/run_order.py).
- each variant's step with one term per run (training/bench/run_effects.py): every process of the
  setup in one least-squares fit, the gap in ms with its standard error, and the spread
  between processes on one host.

    kselect bench e2e-pool reports/2026-12-0*/call*/*/decode* --out reports/2026-12-05-e2e-h200-pooled

Only runs of one setup pool. The setup is the GPU, model, workload, dtype, batch, sequence,
and each setting that changes what a variant does or how it is timed (SETTINGS_THAT_MATTER).
Runs with `--profile-compile` are left out, since cProfile slows their compile. Each setup
names the kselect code its processes ran (training/measure/provenance.py; "not recorded" before the
reports/2026-12-04-prefill-verify-vs-default-decode-gemm-rerun), and says so when that is mixed.

This module pools; e2e_pool_load.py reads the runs, e2e_pool_stats.py says how sure each
comparison is, e2e_pool_gpu.py what the GPU did, e2e_pool_render.py writes the README.
"""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.bench.e2e_pool_gpu import device_state_medians, sequence_gaps
from kselect.training.bench.e2e_pool_load import load_runs
from kselect.training.bench.e2e_pool_render import render
from kselect.training.bench.e2e_pool_stats import compare, compare_pairs, compare_per_run, effects, targets_per_run
from kselect.training.bench.e2e_report import combine_repeats, targets
from kselect.training.bench.e2e_spec import ORDER, write_json
from kselect.training.bench.pooling import PoolError


def pool_e2e_runs(results: list[str], out: str | Path, variants: list[str] | None = None, command: str = "") -> dict:
    """Pool the processes of the given runs (only `variants`, when given) into `out`
    (results.json, README.md); returns the report."""
    runs, skipped = load_runs(results)
    unknown = sorted(set(variants or ()) - set(ORDER))
    if unknown:
        raise PoolError(f"unknown variant(s) {unknown}: expected some of {list(ORDER)}")
    if variants:
        runs = [r for r in runs if r["variant"] in variants]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "command": command,
        "sources": sorted({r["source"] for r in runs}),
        "skipped": skipped,
        "setups": pool(runs),
    }
    write_json(out / "results.json", report)
    (out / "README.md").write_text(render(report))
    report["processes"] = len(runs)
    return report


def _setup_key(setup: dict) -> str:
    return json.dumps(setup, sort_keys=True, default=str)


def pool(runs: list[dict]) -> list[dict]:
    """One entry per setup: its combined variants (medians), targets and comparisons."""
    by_setup: dict = {}
    for r in runs:
        by_setup.setdefault(_setup_key(r["setup"]), []).append(r)
    out = []
    for rs in by_setup.values():
        ok = [r for r in rs if r.get("status") == "ok"]
        failed = {}
        for r in rs:
            if r.get("status") != "ok":
                failed[r["variant"]] = failed.get(r["variant"], 0) + 1
        combined = sorted(combine_repeats(ok), key=lambda r: ORDER.index(r["variant"])) if ok else []
        for row in combined:
            mine = [r for r in ok if r["variant"] == row["variant"]]
            row["processes"] = len(mine)
            row["results_ok"] = sum(1 for r in mine if (r.get("correctness") or {}).get("ok"))
            row["sources"] = sorted({r["source"] for r in mine})
            state = device_state_medians(mine)
            if state:
                row["device_state"] = state
        per_run = compare_per_run(ok)
        codes: dict = {}
        for r in rs:
            codes.setdefault(r["code"], set()).add(r["source"])
        out.append(
            {
                "setup": rs[0]["setup"],
                "processes": len(ok),
                "not_ok": failed,
                "code": {c: len(files) for c, files in sorted(codes.items())},
                "variants": combined,
                "targets": targets(combined) if combined else [],
                "comparisons": compare(ok),
                "per_run": per_run,
                "targets_per_run": targets_per_run(per_run),
                "pairs": compare_pairs(ok),
                "effects": effects(ok),
                "sequence_gaps": sequence_gaps(ok, combined),
            }
        )
    return sorted(out, key=lambda s: (s["setup"]["model"], s["setup"]["workload"]))
