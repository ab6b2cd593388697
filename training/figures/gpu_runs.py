"""The README status table's GPU rows, each recomputed from its report's committed rows with
the computation that report's own script used (named beside each function)."""

from __future__ import annotations

import collections
import itertools
import math
import statistics
from pathlib import Path

from kselect.training.bench.noise_rule import against_plain, kernel_times, ratio_to_plain
from kselect.training.figures.raw import load_csv, load_json, load_jsonl, times

UNSEEN_VERIFY = "reports/2026-12-06-unseen-verify-one-machine-h100/run/results.jsonl"
UNSEEN_PREDICT = "reports/2026-12-06-aten-probe-cupti/pooled/results.jsonl"
UNSEEN_FLAGGED = "reports/2026-12-06-unseen-flagged-h100/run/results.jsonl"
UNSEEN_TUNING = "reports/2026-12-06-unseen-bench-h100-noise-rule/pooled/summary.json"
ATEN_BEFORE = "reports/2026-12-06-verify-aten-reading/call1-diagnose/rows.jsonl"
ATEN_NOW = "reports/2026-12-06-verify-aten-reading/call2-conditions/rows.jsonl"
E2E_8_LAYERS = "reports/2026-12-05-e2e-h200-pooled/8-layers/results.json"
DECODE_WARM_START = "reports/2026-12-05-e2e-h200-pooled/1-layer-decode-warm-start/results.json"
PREDICT_DECISIONS = "reports/2026-12-03-predict-compile-first-decision-forest-serving/call2/b/dec/results.jsonl"
FAITHFUL = "reports/2026-12-05-faithful-kernels/h100-call1/specialisation.csv"
# judge.py's numbers from run/reach and run/noreach's rows (that report's README)
REACH_H200 = "reports/2026-12-07-verify-reach-h200/run/judge.json"

RAW = [
    UNSEEN_VERIFY,
    UNSEEN_PREDICT,
    UNSEEN_FLAGGED,
    UNSEEN_TUNING,
    ATEN_BEFORE,
    ATEN_NOW,
    E2E_8_LAYERS,
    DECODE_WARM_START,
    PREDICT_DECISIONS,
    FAITHFUL,
    REACH_H200,
]


def noise_rule(root: Path, rel: str, variant: str) -> dict:
    """A variant against plain by the noise rule (training/bench/noise_rule.py, as
    reports/2026-12-06-unseen-bench-h100-noise-rule/noise_rule.py reads it): per GEMM its median
    time over plain's mean, slower when beyond the GEMM's noise."""
    readings = against_plain(kernel_times(load_jsonl(root, rel)), variant)
    ratios = {key: r.ratio for key, r in readings.items()}
    slower = sum(r.slower for r in readings.values())
    return {"ratios": ratios, "speed": 1 / statistics.geometric_mean(ratios.values()), "slower": slower}


def template_speed(root: Path, rel: str) -> tuple[int, float]:
    """The GEMMs where verify ran a template in every process: how many, and their speed over
    plain's (geomean), as the report's README gives them."""
    chosen = collections.defaultdict(set)
    for r in load_jsonl(root, rel):
        if r["variant"] == "kselect-verify" and r.get("kernel_ms") is not None:
            chosen[r["problem"]].add(r.get("chosen") or "")
    ratios = noise_rule(root, rel, "kselect-verify")["ratios"]
    kept = [k for k, c in chosen.items() if all(x and not x.startswith("aten:") for x in c)]
    return len(kept), 1 / statistics.geometric_mean(ratios[k] for k in kept)


def _exact_p(plain: list[float], verify: list[float]) -> float:
    """A GEMM's permutation p-value (relabel_null.py --exact of the one-machine run's report)."""
    both, k = plain + verify, len(plain)
    observed = ratio_to_plain(plain, verify)
    ratios = [
        ratio_to_plain([both[i] for i in idx], [both[i] for i in range(len(both)) if i not in idx])
        for idx in itertools.combinations(range(len(both)), k)
    ]
    return sum(r >= observed for r in ratios) / len(ratios)


def permutation_slower(root: Path, rel: str) -> tuple[int, int]:
    """(GEMMs, how many of them the permutation rule calls slower: the observed labelling the
    most extreme of all, p <= 1 / C(n, k))."""
    kernel_ms = kernel_times(load_jsonl(root, rel))
    slower = 0
    for v in kernel_ms.values():
        plain, verify = v["plain"], v["kselect-verify"]
        slower += _exact_p(plain, verify) <= 1 / math.comb(len(plain) + len(verify), len(plain))
    return len(kernel_ms), slower


def _count(n: int) -> str:
    return "none" if n == 0 else str(n)


def aten_reading(root: Path, rel: str, column: str) -> list[float]:
    """ATen's reading over the compiled function's kernel time, per shape: call 1's `primary`
    read (summarise.py), call 2's last `verify` read (summarise_conditions.py)."""
    ratios = []
    for r in load_jsonl(root, rel):
        if column == "primary":
            got = next(v for rd in r["verify_reads"] for k, v in rd["choices"].items() if k.startswith("aten"))
            ratios.append(got["primary"] / r["compiled"])
        else:
            rd = r["reads"][-1]
            i = next(j for j, n in enumerate(rd["names"]) if n.startswith("aten"))
            ratios.append(rd[column][i] / r["compiled"])
    return ratios


def e2e_comparison(root: Path, rel: str, comparison: str, workload: str, **settings) -> float:
    """One pooled comparison's ratio (kselect bench e2e-pool) in the setup of that workload
    whose settings match `settings`; exactly one setup must."""
    found = [
        c["ratio"]
        for s in load_json(root, rel)["setups"]
        if s["setup"]["workload"] == workload and all(s["setup"]["settings"].get(k) == v for k, v in settings.items())
        for c in s["comparisons"]
        if c["comparison"] == comparison
    ]
    if len(found) != 1:
        raise ValueError(f"{rel}: {len(found)} setups give {comparison!r} for {workload} {settings}")
    return found[0]


def verify_compile_range(root: Path, rel: str) -> str:
    """verify's compile over plain's, lowest..highest over the setups that ran both."""
    ratios = [
        c["ratio"]
        for s in load_json(root, rel)["setups"]
        for c in s["comparisons"]
        if c["comparison"] == "verify compile / plain's"
    ]
    return f"{min(ratios):.2f}-{max(ratios):.3f}"


def decisions_ms(root: Path, rel: str) -> list[float]:
    """Each predict decision's time (ms) in a gemm bench, the GEMMs it decided."""
    return [r["decision_ms"] for r in load_jsonl(root, rel) if r.get("decisions")]


def faithful_pairs(root: Path, rel: str) -> list[tuple[str, float]]:
    """(template, collector / compiled) per tile pair: ATen and decompose-k apart, as the
    report's README counts them (decompose-k has no compiled time)."""
    return [
        (r["template"], float(r["collector_ms"]) / float(r["compiled_ms"]))
        for r in load_csv(root, rel)
        if r["compiled_ms"] and r["template"] not in ("aten:mm", "triton:decompose_k")
    ]


def _mm_beyond_10(root: Path) -> str:
    """The mm template's pairs beyond 10 % of the compiled kernel (its largest tiles), lo-hi."""
    slow = [x for t, x in faithful_pairs(root, FAITHFUL) if t == "triton:mm" and x > 1.10]
    return f"{min(slow):.2f}-{max(slow):.2f}"


DOC = "README.md"


def _pooled(rel: str, comparison: str, workload: str, **settings) -> tuple:
    """A README figure: one pooled comparison's ratio (see `e2e_comparison`)."""
    return DOC, lambda r: times(e2e_comparison(r, rel, comparison, workload, **settings))


# name -> (the doc it is in, how its text is computed from the repository root)
FIGURES = {
    # unseen families: verify on one machine, predict's pooled run, the flagged GEMMs re-run
    "status.unseen.gemms": (DOC, lambda r: str(len(noise_rule(r, UNSEEN_VERIFY, "kselect-verify")["ratios"]))),
    "status.unseen.predict": (DOC, lambda r: times(noise_rule(r, UNSEEN_PREDICT, "kselect-predict")["speed"])),
    "status.unseen.predict-slower": (DOC, lambda r: str(noise_rule(r, UNSEEN_PREDICT, "kselect-predict")["slower"])),
    "status.unseen.verify": (DOC, lambda r: times(noise_rule(r, UNSEEN_VERIFY, "kselect-verify")["speed"])),
    "status.unseen.templates": (DOC, lambda r: str(template_speed(r, UNSEEN_VERIFY)[0])),
    "status.unseen.templates-speed": (DOC, lambda r: times(template_speed(r, UNSEEN_VERIFY)[1], 2)),
    "status.unseen.flagged": (DOC, lambda r: str(permutation_slower(r, UNSEEN_FLAGGED)[0])),
    "status.unseen.flagged-slower": (DOC, lambda r: _count(permutation_slower(r, UNSEEN_FLAGGED)[1])),
    "status.unseen.tuning": (
        DOC,
        lambda r: times(
            load_json(r, UNSEEN_TUNING)["summary"]["tuning_time_ratio"]["kselect-verify/default"]["geomean"]
        ),
    ),
    # verify's reach budget on the H200: the unseen GEMMs it leaves to ATen
    "status.reach.gemms": (DOC, lambda r: str(load_json(r, REACH_H200)["gemms"])),
    "status.reach.faster": (DOC, lambda r: str(len(load_json(r, REACH_H200)["model_alone_faster"]))),
    "status.reach.timed": (DOC, lambda r: str(len(load_json(r, REACH_H200)["timed_where_forecast_none"]))),
    "status.reach.tuning": (DOC, lambda r: times(load_json(r, REACH_H200)["tuning_ratio_shipped_over_model_alone"])),
    # verify's reading of cuBLAS against the compiled function's
    "status.aten-reading.shapes": (DOC, lambda r: str(len(aten_reading(r, ATEN_NOW, "verify")))),
    "status.aten-reading.before": (DOC, lambda r: times(statistics.median(aten_reading(r, ATEN_BEFORE, "primary")))),
    "status.aten-reading.before-worst": (DOC, lambda r: times(max(aten_reading(r, ATEN_BEFORE, "primary")), 2)),
    "status.aten-reading.now": (DOC, lambda r: times(statistics.median(aten_reading(r, ATEN_NOW, "verify")))),
    "status.aten-reading.within-3": (
        DOC,
        lambda r: str(sum(abs(x - 1) <= 0.03 for x in aten_reading(r, ATEN_NOW, "verify"))),
    ),
    # end to end, Llama-3-8B, 8 layers (pooled)
    "status.e2e8.train": _pooled(E2E_8_LAYERS, "verify step / DEFAULT's", "train"),
    "status.e2e8.decode": _pooled(E2E_8_LAYERS, "verify GPU-only step / DEFAULT's", "decode"),
    "status.e2e8.prefill-warm": _pooled(
        E2E_8_LAYERS, "verify step / DEFAULT's", "prefill", warmup_s=10.0, compile_budget=0.0
    ),
    "status.e2e8.compile": (DOC, lambda r: verify_compile_range(r, E2E_8_LAYERS)),
    # end to end, 1 layer decode, the warm start (pooled)
    "status.decode1.verify": _pooled(DECODE_WARM_START, "verify compile / plain's", "decode"),
    "status.decode1.predict": _pooled(DECODE_WARM_START, "predict compile / plain's", "decode"),
    # predict's decision per GEMM inside compiles
    "status.decision.median": (DOC, lambda r: f"{statistics.median(decisions_ms(r, PREDICT_DECISIONS)):.2f}"),
    "status.decision.max": (DOC, lambda r: f"{max(decisions_ms(r, PREDICT_DECISIONS)):.2f}"),
    "status.decision.gemms": (DOC, lambda r: str(len(decisions_ms(r, PREDICT_DECISIONS)))),
    # faithful timing: the collector's kernels over the compiled runtime's
    "status.faithful.median": (
        DOC,
        lambda r: times(statistics.median(x for _, x in faithful_pairs(r, FAITHFUL))),
    ),
    "status.faithful-pairs": (DOC, lambda r: str(len(faithful_pairs(r, FAITHFUL)))),
    "status.faithful.mm-largest": (DOC, _mm_beyond_10),
}
