"""How sure each comparison of a pooled setup is: ratios of medians with bootstrap intervals
and Mann-Whitney U p-values, the same within each run and combined, pair by pair with a sign
test, the run-effects fit, and the targets judged on the runs combined."""

from __future__ import annotations

import statistics

from kselect.training.bench.e2e_spec import PREDICT_COMPILE_VS_PLAIN, VERIFY_COMPILE_VS_PLAIN
from kselect.training.bench.run_effects import fit_effects

# (label, variant, baseline, what): what = "step" | "gpu" | "compile" (with kselect's load)
COMPARISONS = (
    ("verify step / DEFAULT's", "kselect-verify", "default", "step"),
    ("verify GPU-only step / DEFAULT's", "kselect-verify", "default", "gpu"),
    # the two differ only where verify measured a Triton template faster than ATen
    ("verify GPU-only step / predict's", "kselect-verify", "kselect-predict", "gpu"),
    # the same kernels; verify frees its measurement's memory, verify-keep does not
    ("verify GPU-only step / verify-keep's", "kselect-verify", "kselect-verify-keep", "gpu"),
    ("verify-keep GPU-only step / predict's", "kselect-verify-keep", "kselect-predict", "gpu"),
    # the same kernels; verify-cool idles the GPU while its templates compile
    ("verify-cool GPU-only step / predict's", "kselect-verify-cool", "kselect-predict", "gpu"),
    ("verify GPU-only step / verify-cool's", "kselect-verify", "kselect-verify-cool", "gpu"),
    ("verify compile / plain's", "kselect-verify", "plain", "compile"),
    # the same decisions; verify-workers compiles its kept templates in Inductor's workers
    ("verify-workers compile / plain's", "kselect-verify-workers", "plain", "compile"),
    ("verify-workers compile / verify's", "kselect-verify-workers", "kselect-verify", "compile"),
    # verify-unpriced keeps the slow-to-compile templates verify passes over
    ("verify-unpriced compile / plain's", "kselect-verify-unpriced", "plain", "compile"),
    ("verify compile / verify-unpriced's", "kselect-verify", "kselect-verify-unpriced", "compile"),
    # the same decisions; verify-cold-start prepares Triton on the compiling thread
    ("verify-cold-start compile / plain's", "kselect-verify-cold-start", "plain", "compile"),
    ("verify compile / verify-cold-start's", "kselect-verify", "kselect-verify-cold-start", "compile"),
    ("verify GPU-only step / verify-unpriced's", "kselect-verify", "kselect-verify-unpriced", "gpu"),
    ("predict compile / plain's", "kselect-predict", "plain", "compile"),
    ("DEFAULT compile / plain's", "default", "plain", "compile"),
)
CONFIDENCE = 0.90
# the baseline of the run-effects fit: the first of these a setup ran (DEFAULT: the target's)
EFFECT_BASELINES = ("default", "kselect-predict", "plain")


def _value(run: dict, what: str) -> float | None:
    """One process's number for a comparison (kselect's compile with its model load), or None."""
    if what == "step":
        return run.get("step_ms")
    if what == "gpu":
        return run.get("graph_step_ms")
    return None if run.get("compile_s") is None else run["compile_s"] + (run.get("kselect_load_s") or 0.0)


def _samples(runs: list[dict], variant: str, what: str) -> list[float]:
    values = (_value(r, what) for r in runs if r["variant"] == variant)
    return [v for v in values if v is not None]


def compare(ok: list[dict]) -> list[dict]:
    """Each comparison both of whose variants ran: ratio of medians, its bootstrap interval and
    the one-sided Mann-Whitney U p-value for "the variant is slower than its baseline"."""
    rows = []
    for label, variant, baseline, what in COMPARISONS:
        mine, theirs = _samples(ok, variant, what), _samples(ok, baseline, what)
        if not mine or not theirs:
            continue
        row = {
            "comparison": label,
            "n": [len(mine), len(theirs)],
            "ratio": statistics.median(mine) / statistics.median(theirs),
            "interval": None,
            "p_slower": None,
        }
        if len(mine) >= 2 and len(theirs) >= 2:
            row["interval"], row["p_slower"] = ratio_interval(mine, theirs), p_slower(mine, theirs)
        rows.append(row)
    return rows


def compare_per_run(ok: list[dict], seed: int = 0) -> list[dict]:
    """Each comparison within every run that has both variants, and those runs combined: the
    geometric mean of the runs' ratios of medians, weighted by n1 * n2 / (n1 + n2) (a run with
    one process of a variant says little), with a bootstrap interval that resamples each
    run's processes within that run (none where a run has a variant only once: resampling one
    process cannot show its spread). Only where two or more runs have both variants; with one,
    the pooled comparison is already that run's."""
    import numpy as np

    sources = sorted({r["source"] for r in ok})
    rows = []
    for label, variant, baseline, what in COMPARISONS:
        runs = []
        for src in sources:
            rs = [r for r in ok if r["source"] == src]
            mine, theirs = _samples(rs, variant, what), _samples(rs, baseline, what)
            if mine and theirs:
                runs.append((src, np.asarray(mine), np.asarray(theirs)))
        if len(runs) < 2:
            continue
        weight = np.array([len(a) * len(b) / (len(a) + len(b)) for _, a, b in runs])
        weight /= weight.sum()
        log_ratio = np.array([np.log(np.median(a) / np.median(b)) for _, a, b in runs])
        interval = None
        if min(min(len(a), len(b)) for _, a, b in runs) >= 2:
            interval = combined_interval([x for _, a, b in runs for x in (a, b)], weight, seed)
        rows.append(
            {
                "comparison": label,
                "ratio": float(np.exp(weight @ log_ratio)),
                "interval": interval,
                "runs": [
                    {"source": src, "n": [len(a), len(b)], "ratio": float(np.exp(lr))}
                    for (src, a, b), lr in zip(runs, log_ratio)
                ],
            }
        )
    return rows


def compare_pairs(ok: list[dict]) -> list[dict]:
    """Each comparison pair by pair: the variant's and the baseline's process of the same round
    (`repeat`) of the same run. Per comparison: the pairs' ratios, how many read the variant
    slower, a two-sided sign test on that count (ties left out), and the pairs split by
    whether the variant ran before or after its baseline -- so that an effect of the position
    in the round does not read as one of the variant."""
    from scipy.stats import binomtest

    rows = []
    for label, variant, baseline, what in COMPARISONS:
        pairs = []
        for r in ok:
            if r["variant"] != variant:
                continue
            base = [
                b
                for b in ok
                if b["variant"] == baseline and b["source"] == r["source"] and b.get("repeat", 0) == r.get("repeat", 0)
            ]
            if len(base) != 1:
                continue
            mine, theirs = _value(r, what), _value(base[0], what)
            if mine is None or theirs is None:
                continue
            pairs.append(
                {
                    "source": r["source"],
                    "repeat": r.get("repeat", 0),
                    "ratio": mine / theirs,
                    "first": r.get("position", 0) < base[0].get("position", 0),
                }
            )
        if not pairs:
            continue
        slower = sum(p["ratio"] > 1 for p in pairs)
        untied = sum(p["ratio"] != 1 for p in pairs)

        def median_of(ps):
            return statistics.median(p["ratio"] for p in ps) if ps else None

        rows.append(
            {
                "comparison": label,
                "pairs": pairs,
                "n": len(pairs),
                "slower": slower,
                "median_ratio": median_of(pairs),
                "p_sign": float(binomtest(slower, untied).pvalue) if untied else None,
                "ran_first": {
                    "n": sum(p["first"] for p in pairs),
                    "median_ratio": median_of([p for p in pairs if p["first"]]),
                },
                "ran_second": {
                    "n": sum(not p["first"] for p in pairs),
                    "median_ratio": median_of([p for p in pairs if not p["first"]]),
                },
            }
        )
    return rows


def effects(ok: list[dict]) -> dict:
    """Per step measure (eager, GPU-only), every variant's term over the baseline's in a fit with
    one term per run (run_effects.fit_effects); {} when no baseline ran."""
    present = {r["variant"] for r in ok}
    baseline = next((b for b in EFFECT_BASELINES if b in present), None)
    out = {}
    for what in ("step", "gpu"):
        got = fit_effects([(r["source"], r["variant"], _value(r, what)) for r in ok], baseline) if baseline else None
        if got is not None:
            out[what] = got
    return out


def combined_interval(samples: list, weight, seed: int = 0) -> list[float]:
    """Percentile-bootstrap CONFIDENCE interval of exp(sum_i weight_i * log(median(a_i) /
    median(b_i))), samples = [a_1, b_1, a_2, b_2, ...]: each sample resampled apart, so each
    run's processes only within that run (fixed seed: the same files give the same report)."""
    import numpy as np
    from scipy.stats import bootstrap

    def statistic(*xs, axis):
        med = [np.median(x, axis=axis) for x in xs]
        return np.exp(sum(w * np.log(a / b) for w, a, b in zip(weight, med[0::2], med[1::2])))

    res = bootstrap(
        tuple(np.asarray(x) for x in samples),
        statistic,
        vectorized=True,
        paired=False,
        confidence_level=CONFIDENCE,
        n_resamples=4000,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def targets_per_run(per_run: list[dict]) -> dict:
    """{variant: True/False} for each target whose every half has a runs-combined ratio: verify's
    step <= DEFAULT's and compile <= 1.25x plain's, predict's compile <= 1.05x plain's."""
    ratio = {c["comparison"]: c["ratio"] for c in per_run}
    out = {}
    step, compile_x = ratio.get("verify step / DEFAULT's"), ratio.get("verify compile / plain's")
    if step is not None and compile_x is not None:
        out["kselect-verify"] = step <= 1.0 and compile_x <= VERIFY_COMPILE_VS_PLAIN
    if ratio.get("predict compile / plain's") is not None:
        out["kselect-predict"] = ratio["predict compile / plain's"] <= PREDICT_COMPILE_VS_PLAIN
    return out


def p_slower(mine: list[float], theirs: list[float]) -> float:
    """One-sided Mann-Whitney U: the chance of samples this much larger if neither is."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(mine, theirs, alternative="greater").pvalue)


def ratio_interval(mine: list[float], theirs: list[float], seed: int = 0) -> list[float]:
    """Percentile-bootstrap CONFIDENCE interval of median(mine) / median(theirs), each sample
    resampled apart (fixed seed: the same files give the same report): one run, weight 1."""
    return combined_interval([mine, theirs], [1.0], seed)
