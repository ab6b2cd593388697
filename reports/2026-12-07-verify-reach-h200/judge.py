"""The reach run's reading by its rule (reports/device/rules.md, "Verify's reach budget on an H200",
as it ran in reports/device/history.md), on run.sh's records:

1. every verify process of the shipped arm (`run/reach`, kselect-verify) benchmarks no template on
   each of the 32 GEMMs of none.csv, read from its rows' `benchmarked` (Inductor benchmarks only
   where more than one choice is kept, so 0 means ATen alone); else the GEMMs are named;
2. per GEMM, the model-alone arm (`run/noreach`) against the shipped arm under the bench's noise
   rule (training/bench/noise_rule.py: the GEMM's noise is plain's max/min over its processes,
   floored at plain's median over the set; the model-alone arm's median over the shipped arm's
   mean): met when at most 2 of the 32 are faster beyond noise in the model-alone arm and its
   geomean gain over the 32 is <= 1 %;
3. the tuning (compile minus plain's, per GEMM the median over its processes, a ratio of totals)
   of the shipped arm over the model-alone arm.

Usage: python judge.py [RUN_DIR]   (default: run/ beside this file); writes judge.md there, and\njudge.json (the numbers the README's status table reads).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from kselect.training.bench.noise_rule import AgainstPlain, kernel_times

HERE = Path(__file__).parent
MAX_FASTER, MAX_GAIN = 2, 0.01


def _rows(path: Path, rename: dict) -> list[dict]:
    rows = [json.loads(line) for line in path.open() if line.strip()]
    return [dict(r, variant=rename.get(r["variant"], r["variant"])) for r in rows]


def read(run: Path) -> tuple[list[dict], list[str]]:
    """The rows of both arms (the model-alone arm's verify renamed `model-alone`), and the 32
    GEMMs of none.csv in its order."""
    rows = _rows(run / "reach" / "results.jsonl", {"kselect-verify": "shipped"})
    rows += _rows(run / "noreach" / "results.jsonl", {"kselect-verify": "model-alone"})
    lines = (HERE / "none.csv").read_text().splitlines()
    names = lines[0].split(",")
    gemms = []
    for line in lines[1:]:
        cells = dict(zip(names, line.split(",")))
        gemms.append(f"mm:{cells['M']}x{cells['N']}x{cells['K']}:{cells['dtype']}:{cells['layout']}")
    return rows, gemms


def judge(rows: list[dict], gemms: list[str]) -> str:
    measured = [r for r in rows if r.get("kernel_ms") is not None]
    skipped = [r for r in rows if r.get("skipped")]
    timed = sorted(
        {r["problem"] for r in measured if r["variant"] == "shipped" and r.get("benchmarked", 0) > 0},
        key=gemms.index,
    )
    times = kernel_times(measured)
    floor = statistics.median(max(v["plain"]) / min(v["plain"]) for v in times.values())
    readings = {}
    for key in gemms:
        v = times[key]
        ratio = statistics.median(v["model-alone"]) / statistics.mean(v["shipped"])
        readings[key] = AgainstPlain(ratio=ratio, noise=max(max(v["plain"]) / min(v["plain"]), floor))
    faster = [k for k, a in readings.items() if a.faster()]
    slower = [k for k, a in readings.items() if a.slower]
    gain = 1 - math.exp(statistics.mean(math.log(a.ratio) for a in readings.values()))

    def median_compile(key, variant):
        return statistics.median(r["compile_s"] for r in measured if r["problem"] == key and r["variant"] == variant)

    totals = {v: sum(median_compile(k, v) for k in gemms) for v in ("plain", "shipped", "model-alone")}
    tuning = {v: totals[v] - totals["plain"] for v in ("shipped", "model-alone")}
    picks = {v: sorted({r["chosen"] for r in measured if r["variant"] == v}) for v in ("shipped", "model-alone")}
    processes = {
        v: (len({r["repeat"] for r in measured if r["variant"] == v}), sum(r["variant"] == v for r in measured))
        for v in ("plain", "shipped", "model-alone")
    }
    met_1 = not timed
    met_2 = len(faster) <= MAX_FASTER and gain <= MAX_GAIN
    numbers = {
        "gemms": len(gemms),
        "timed_where_forecast_none": timed,
        "model_alone_faster": faster,
        "model_alone_slower": slower,
        "model_alone_geomean_gain": gain,
        "tuning_s": tuning,
        "tuning_ratio_shipped_over_model_alone": tuning["shipped"] / tuning["model-alone"],
        "met": {"count": met_1, "kernel_time": met_2},
    }

    out = ["# The reach run, judged by its rule", ""]
    out.append(f"Card: {(RUN / 'card.txt').read_text().strip().splitlines()[0]}. GEMMs: {len(gemms)} (none.csv).")
    for v, (n, rows_n) in processes.items():
        out.append(f"- {v}: {rows_n} measured rows over {n} processes")
    if skipped:
        out.append(f"- skipped by the time budget: {len(skipped)} rows ({sorted({r['variant'] for r in skipped})})")
    out.append(f"- picks: shipped {picks['shipped']}, model-alone {picks['model-alone']}")
    out += ["", "## 1. The shipped arm times no template on the 32", ""]
    if met_1:
        out.append("Met: every shipped verify process benchmarked nothing on each of the 32.")
    else:
        out.append(f"Not met on {len(timed)} of {len(gemms)}: the GPU's count is not the CPU's there.")
        for key in timed:
            counts = sorted(
                r["benchmarked"] for r in measured if r["problem"] == key and r["variant"] == "shipped"
            )
            out.append(f"- {key}: benchmarked {counts} choices in its processes")
    out += ["", "## 2. The model-alone arm against the shipped arm (kernel time)", ""]
    out.append("| GEMM | model-alone / shipped | noise | reading |")
    out.append("| --- | --- | --- | --- |")
    for key, a in readings.items():
        verdict = "faster" if a.faster() else "slower" if a.slower else "tie"
        out.append(f"| {key} | {a.ratio:.3f} | {a.noise:.3f} | {verdict} |")
    out.append("")
    out.append(
        f"Faster beyond noise in the model-alone arm: {len(faster)} (at most {MAX_FASTER}); slower: "
        f"{len(slower)} ({', '.join(slower) or 'none'}). Its geomean gain over the shipped arm: "
        f"{gain * 100:+.2f} % (at most {MAX_GAIN * 100:.0f} %). **{'Met' if met_2 else 'Not met'}.**"
    )
    out += ["", "## 3. Tuning (compile minus plain's, medians per GEMM, totals over the 32)", ""]
    out.append(
        f"plain {totals['plain']:.2f} s; shipped {totals['shipped']:.2f} s (tuning {tuning['shipped']:.2f} s); "
        f"model-alone {totals['model-alone']:.2f} s (tuning {tuning['model-alone']:.2f} s). "
        f"Shipped over model-alone: **{tuning['shipped'] / tuning['model-alone']:.3f}**."
    )
    return "\n".join(out) + "\n", numbers


if __name__ == "__main__":
    RUN = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "run"
    text, numbers = judge(*read(RUN))
    (RUN / "judge.md").write_text(text)
    (RUN / "judge.json").write_text(json.dumps(numbers, indent=1) + "\n")
    print(text)
