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
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from kselect.training.bench.common import run_settings
from kselect.training.bench.e2e_report import combine_repeats, graph_gap_ms, targets
from kselect.training.bench.e2e_spec import ORDER, PREDICT_COMPILE_VS_PLAIN, VERIFY_COMPILE_VS_PLAIN, write_json
from kselect.training.bench.kernel_time import sequence_differences
from kselect.training.bench.pooling import PoolError, read_results
from kselect.training.bench.run_effects import fit_effects

# bench settings that change what a variant does or how it is timed: runs differing in any
# of them are different experiments (absent in an older results.json: None)
SETTINGS_THAT_MATTER = (
    "autotune",
    "freezing",
    "kselect_space",
    "k",
    "adaptive_k",
    "min_k",
    "aten_margin",
    "compile_budget",
    "early_decision",
    "warm_start",
    "warm_pool",
    "steps",
    "warmup",
    "warmup_s",
)
# a setting added later, as the runs made before it existed had it (they pool with its value then)
SETTINGS_BEFORE_THEY_EXISTED = {"warmup_s": 0.0, "compile_budget": 0.0, "warm_start": False}
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


def load_runs(paths) -> tuple[list[dict], list[str]]:
    """Every run of the given results.json files, each with its setup and source attached;
    and a line per file left out (--profile-compile)."""
    runs, skipped = [], []
    for given in paths:
        path, text = read_results(given, "results.json")
        try:
            report = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PoolError(f"{path}: not JSON ({exc})") from None
        if (
            not isinstance(report, dict)
            or not isinstance(report.get("runs"), list)
            or not isinstance(report.get("settings"), dict)
        ):
            raise PoolError(f"{path}: not a `kselect bench e2e` results.json (no 'settings' and 'runs')")
        settings = run_settings(report["settings"])
        if settings.get("profile_compile"):
            skipped.append(f"{path}: --profile-compile (cProfile slows the compile)")
            continue
        env = report.get("env") or {}
        gpu = env.get("gpu_name") or settings.get("device")
        code = env.get("kselect_code") or "not recorded"  # training/measure/provenance.py
        fixed = tuple((k, settings.get(k, SETTINGS_BEFORE_THEY_EXISTED.get(k))) for k in SETTINGS_THAT_MATTER)
        for position, r in enumerate(report["runs"]):  # bench e2e lists runs in the order they ran
            if not isinstance(r, dict) or not {"workload", "variant", "model", "status"} <= set(r):
                raise PoolError(f"{path}: a run without workload/variant/model/status")
            setup = {
                "gpu": gpu,
                "model": r["model"],
                "workload": r["workload"],
                "dtype": r.get("dtype", settings.get("dtype")),
                "batch": r.get("batch", settings.get("batch")),
                "seq": r.get("seq", settings.get("seq")),
                "settings": dict(fixed),
            }
            runs.append({**r, "source": str(path), "setup": setup, "code": code, "position": position})
    return runs, skipped


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


# (variant, baseline) whose replays' kernel sequences are compared position by position
SEQUENCE_PAIRS = (("kselect-verify", "kselect-predict"), ("kselect-verify", "default"))


def median_sequence(runs: list[dict]) -> tuple[list, int] | None:
    """The replays' kernel sequence (graph_kernel_time.sequence) as the median per position over
    the processes that ran the first one's kernels in its order, and how many did; None
    without any. Why: one process's per-kernel times carry its clock; medians over processes
    leave what the variant's graph does."""
    seqs = [s for s in ((r.get("graph_kernel_time") or {}).get("sequence") for r in runs) if s]
    if not seqs:
        return None
    names = [name for name, _ in seqs[0]]
    seqs = [s for s in seqs if [name for name, _ in s] == names]
    return [[n, statistics.median(s[i][1] for s in seqs)] for i, n in enumerate(names)], len(seqs)


def sequence_gaps(ok: list[dict], combined: list[dict]) -> list[dict]:
    """For each SEQUENCE_PAIRS pair that both have sequences: kernel_time.sequence_differences
    of their median sequences, beside the difference of their GPU-only step medians (the
    `combined` rows') -- how much of a replay gap sits in kernels, and where (before, at or
    after the swapped GEMM)."""
    gpu_ms = {row["variant"]: row.get("graph_step_ms") for row in combined}
    out = []
    for variant, baseline in SEQUENCE_PAIRS:
        a = median_sequence([r for r in ok if r["variant"] == variant])
        b = median_sequence([r for r in ok if r["variant"] == baseline])
        if a is None or b is None:
            continue
        mine, theirs = gpu_ms.get(variant), gpu_ms.get(baseline)
        step_us = None if mine is None or theirs is None else (mine - theirs) * 1e3
        diff = sequence_differences(a[0], b[0], top=3)
        out.append(
            {"variant": variant, "baseline": baseline, "processes": [a[1], b[1]], "gpu_step_diff_us": step_us, **diff}
        )
    return out


STATE_FIELDS = ("reserved_gb", "sm_clock_mhz", "temperature_c", "power_mw", "energy_mj_per_step")
# energy per step counts only where it came from the counter's moves (gpu_state.counter_power);
# the entry-to-exit joules of reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode are off by up to one counter step (~10 %)
ENERGY_NEEDS = "counter_power_mw"


def device_state_medians(runs: list[dict]) -> dict:
    """{moment: {field: median over the processes that recorded it}} of the GPU state `bench
    e2e` records before the timed steps, while and after the graph replays (training/bench/gpu_state.py):
    whether a same-kernel step gap goes with memory held, clocks or temperature."""
    out: dict = {}
    for r in runs:
        for moment, state in (r.get("device_state") or {}).items():
            for field in STATE_FIELDS:
                if field == "energy_mj_per_step" and (state or {}).get(ENERGY_NEEDS) is None:
                    continue
                if (state or {}).get(field) is not None:
                    out.setdefault(moment, {}).setdefault(field, []).append(state[field])
    return {m: {f: statistics.median(v) for f, v in fields.items()} for m, fields in out.items()}


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


def distinguishing_settings(setups: list[dict]) -> list[dict]:
    """Per setup, the bench settings in which it differs from another setup of the same GPU,
    model and workload (e.g. verify's k), so that two headings alike tell which is which;
    {} for a setup alone of its kind."""

    def kind(st):  # the setup but its bench settings
        return {k: v for k, v in st.items() if k != "settings"}

    out = []
    for st in setups:
        others = [o for o in setups if o is not st and kind(o) == kind(st)]
        keys = [k for k in SETTINGS_THAT_MATTER if any(o["settings"].get(k) != st["settings"].get(k) for o in others)]
        out.append({k: st["settings"].get(k) for k in keys})
    return out


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _state_lines(variants: list[dict]) -> list[str]:
    """The GPU-only step beside what may move it on the same kernels: the replay time outside
    the profiled kernels and the recorded GPU state (medians over processes); [] without them."""
    rows = [v for v in variants if v.get("device_state") or graph_gap_ms(v) is not None]
    if not rows:
        return []

    def at(v, moment, field, spec, per=1.0):  # per: a unit's size (1e3: mW -> W, mJ -> J)
        x = ((v.get("device_state") or {}).get(moment) or {}).get(field)
        return _fmt(None if x is None else x / per, spec)

    # --warmup-s runs read the state once warm too: a column part of its own only where one did
    warm = any("after_warmup" in (v.get("device_state") or {}) for v in rows)

    def moments(*names):
        return tuple(m for m in names if warm or m != "after_warmup")

    clock_moments = moments("before_steps", "after_warmup", "during_replays", "after_replays")
    temp_moments = moments("before_steps", "after_warmup", "after_replays")
    w = " / warm" if warm else ""
    lines = [
        "",
        "GPU-only step and what may move it on the same kernels (medians; the step over all the "
        "variant's processes, each other column over those that recorded it -- runs before the "
        "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k did not; before = before the timed steps, during = sampled while the graph "
        "replays were timed (runs from 2026-12-04 on), after = after the replays; energy per step from the "
        "energy counter's moves (runs from 2026-12-04 on)" + ("; warm = after --warmup-s" if warm else "") + "):",
        "",
        f"| variant | GPU-only step ms | replay minus kernels ms | reserved GiB, before | SM MHz, before{w} / during "
        f"/ after | temperature C, before{w} / after | power W, during / after | energy J per replayed step |",
        "| --- |" + " --- |" * 7,
    ]

    for v in rows:
        clocks = " / ".join(at(v, m, "sm_clock_mhz", ".0f") for m in clock_moments)
        temps = " / ".join(at(v, m, "temperature_c", ".0f") for m in temp_moments)
        lines.append(
            f"| {v['variant']} | {_fmt(v.get('graph_step_ms'), '.3f')} | {_fmt(graph_gap_ms(v), '.3f')} | "
            f"{at(v, 'before_steps', 'reserved_gb', '.2f')} | {clocks} | {temps} | "
            f"{at(v, 'during_replays', 'power_mw', '.0f', 1e3)} / {at(v, 'after_replays', 'power_mw', '.0f', 1e3)} | "
            f"{at(v, 'during_replays', 'energy_mj_per_step', '.2f', 1e3)} |"
        )
    return lines


def _effect_lines(effects: dict) -> list[str]:
    """The run-effects table: each variant's eager and GPU-only step over the baseline's."""
    if not effects:
        return []
    any_fit = next(iter(effects.values()))
    base = any_fit["baseline"]
    by_variant: dict = {}
    for what, fit in effects.items():
        for e in fit["effects"]:
            by_variant.setdefault(e["variant"], {})[what] = e

    def cell(e):
        if e is None:
            return "-"
        se = "" if e["se"] is None else f" +- {e['se']:.3f}"
        return f"{e['diff']:+.3f}{se}" + ("" if e["t"] is None else f" (t = {e['t']:+.1f})")

    runs = any_fit["runs"]
    n_base = any_fit["baseline_processes"]
    lines = [
        "",
        f"Each variant's step against {base}'s ({n_base} process{'es' if n_base > 1 else ''}), with one term "
        f"per run (least squares over every process of the setup, {runs} run{'s' if runs > 1 else ''}; ms over "
        f"{base}'s, +- standard error; the residual is the spread between processes of one variant in one run):",
        "",
        "| variant | processes | eager step | GPU-only step |",
        "| --- | --- | --- | --- |",
    ]
    for v in sorted(by_variant, key=ORDER.index):
        got = by_variant[v]
        n = next(iter(got.values()))["processes"]
        lines.append(f"| {v} | {n} | {cell(got.get('step'))} | {cell(got.get('gpu'))} |")

    def resid(what):
        fit = effects.get(what)
        return "-" if fit is None or fit["residual_sd"] is None else f"sd {fit['residual_sd']:.3f} ({fit['dof']} dof)"

    lines.append(f"| residual | - | {resid('step')} | {resid('gpu')} |")
    return lines


def _sequence_lines(gaps: list[dict]) -> list[str]:
    """Where a replay gap sits in the step's kernel sequence; [] without sequences."""
    if not gaps:
        return []
    lines = [
        "",
        "The replays' kernels position by position (median per position over processes; us per "
        "step, variant minus baseline; the swap is the stretch whose kernel names differ, lined up from "
        "both ends, with its kernel counts; a fused prologue shortens one side):",
        "",
        "| variant vs baseline | processes | kernels per step | GPU-only step diff | kernels diff | before "
        "the swap | at the swap | after it | largest positions |",
        "| --- |" + " --- |" * 8,
    ]
    for g in gaps:
        n = g["positions"]
        kernels = f"{n[0]} vs {n[1]}" if isinstance(n, list) else str(n)
        swap = _fmt(g.get("swap_us"), "+.1f")
        if g.get("swap_kernels"):
            swap += f" ({g['swap_kernels'][0]} vs {g['swap_kernels'][1]} kernels)"
        top = "; ".join(f"#{i} {mine[:40]} {a - b:+.1f}" for i, mine, _, a, b in g["top"])
        lines.append(
            f"| {g['variant']} vs {g['baseline']} | {g['processes'][0]} vs {g['processes'][1]} | "
            f"{kernels} | {_fmt(g['gpu_step_diff_us'], '+.1f')} | {g['total_us']:+.1f} | "
            f"{_fmt(g.get('before_swap_us'), '+.1f')} | {swap} | "
            f"{_fmt(g.get('after_swap_us'), '+.1f')} | {top} |"
        )
    return lines


def render(report: dict) -> str:
    lines = [
        "# `bench e2e` runs, pooled",
        "",
        f"Command: `{report['command']}`",
        "",
        f"{len(report['sources'])} results.json files pooled; processes pool only with others of the "
        "same setup (GPU, model, workload, dtype, batch, sequence and the bench settings that change "
        "a variant or its timing). Medians over processes; kselect variants' compile includes their "
        "one-time model load (tables and targets: median compile + median load, as `bench e2e` "
        "judges; comparisons: each process's compile + load). Comparisons: ratio of medians, a "
        f"percentile-bootstrap {CONFIDENCE:.0%} interval, and the one-sided Mann-Whitney U p-value for "
        '"slower than its baseline" (small: a real slow-down; large: none shown).',
        "",
    ]
    lines += [f"- left out: {s}" for s in report["skipped"]]
    apart = distinguishing_settings([s["setup"] for s in report["setups"]])
    for s, tell in zip(report["setups"], apart):
        st = s["setup"]
        lines += [
            "",
            f"## {st['model']}, {st['workload']} ({st['gpu']}, {st['dtype']}, batch {st['batch']}, "
            f"seq {st['seq']}): {s['processes']} processes"
            + (f" -- {', '.join(f'{k} {v}' for k, v in tell.items())}" if tell else ""),
            "",
        ]
        code = ", ".join(f"`{c}` ({n} file{'s' if n > 1 else ''})" for c, n in s["code"].items())
        lines += [
            f"kselect code: {code}"
            + (
                " -- **mixed**: the processes ran different kselect code; pool like with like where it matters"
                if len(s["code"]) > 1
                else ""
            ),
            "",
        ]
        if s["not_ok"]:
            lines += ["Not ok, left out: " + ", ".join(f"{v} {n}" for v, n in s["not_ok"].items()), ""]
        lines += [
            "| variant | processes | compile s (+ load) | compile CPU s (+ load) | step ms (min-max of processes) "
            "| GPU-only step ms | GEMM kernel ms per step | results within tolerance | files |",
            "| --- |" + " --- |" * 8,
        ]
        for v in s["variants"]:
            load = v.get("kselect_load_s") or 0.0
            gemm = ((v.get("kernel_time") or {}).get("ms_per_step") or {}).get("gemm")
            step = (
                f"{v['step_ms']:.3f} ({v['step_ms_p10']:.3f}-{v['step_ms_p90']:.3f})"
                if v["processes"] > 1
                else _fmt(v.get("step_ms"), ".3f")
            )
            cpu = None if v.get("compile_cpu_s") is None else v["compile_cpu_s"] + load
            lines.append(
                f"| {v['variant']} | {v['processes']} | {v['compile_s'] + load:.2f} | "
                f"{_fmt(cpu, '.2f')} | {step} | {_fmt(v.get('graph_step_ms'), '.3f')} | "
                f"{_fmt(gemm, '.3f')} | {v['results_ok']} of {v['processes']} | {len(v['sources'])} |"
            )
        lines += _state_lines(s["variants"])
        lines += _sequence_lines(s.get("sequence_gaps") or [])
        if s["comparisons"]:
            lines += [
                "",
                f"| comparison | processes | ratio of medians | {CONFIDENCE:.0%} interval | p (slower) |",
                "| --- | --- | --- | --- | --- |",
            ]
            for c in s["comparisons"]:
                ci = "-" if c["interval"] is None else f"{c['interval'][0]:.3f}-{c['interval'][1]:.3f}"
                lines.append(
                    f"| {c['comparison']} | {c['n'][0]} vs {c['n'][1]} | {c['ratio']:.3f} | {ci} | "
                    f"{_fmt(c['p_slower'], '.3f')} |"
                )
        if s.get("per_run"):
            lines += [
                "",
                "Within each run (one host, interleaved processes), then combined: the weighted geometric "
                "mean of the runs' ratios, with a bootstrap interval resampling processes within their run:",
                "",
                f"| comparison | runs | each run's ratio (processes) | combined | {CONFIDENCE:.0%} interval |",
                "| --- | --- | --- | --- | --- |",
            ]
            for c in s["per_run"]:
                each = ", ".join(f"{r['ratio']:.3f} ({r['n'][0]} vs {r['n'][1]})" for r in c["runs"])
                ci = "-" if c["interval"] is None else f"{c['interval'][0]:.3f}-{c['interval'][1]:.3f}"
                lines.append(f"| {c['comparison']} | {len(c['runs'])} | {each} | {c['ratio']:.3f} | {ci} |")
        lines += _effect_lines(s.get("effects") or {})
        if s.get("pairs"):
            lines += [
                "",
                "Pair by pair (the variant's and its baseline's process of one round of one run): "
                "how often the variant read slower, a two-sided sign test, and the pairs split by which of "
                "the two ran first (a gap that follows the position is not the variant's):",
                "",
                "| comparison | pairs | variant slower in | median ratio | p (sign test) "
                "| variant ran first: pairs, median | ran second: pairs, median |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for c in s["pairs"]:
                first, second = c["ran_first"], c["ran_second"]
                lines.append(
                    f"| {c['comparison']} | {c['n']} | {c['slower']} | {c['median_ratio']:.3f} | "
                    f"{_fmt(c['p_sign'], '.3f')} | {first['n']}, {_fmt(first['median_ratio'], '.3f')} | "
                    f"{second['n']}, {_fmt(second['median_ratio'], '.3f')} |"
                )
        if s["targets"]:
            word = {True: "met", False: "**not met**", None: "n/a"}
            lines += [
                "",
                "| variant | target | met (pooled medians) | met (runs combined) | measured (pooled) |",
                "| --- | --- | --- | --- | --- |",
            ]
            for t in s["targets"]:
                per_run = s.get("targets_per_run", {}).get(t["variant"])
                lines.append(
                    f"| {t['variant']} | {t['target']} | {word[t['met']]} | "
                    f"{'-' if per_run is None else word[per_run]} | {t['detail']} |"
                )
    lines += ["", "Files:", ""] + [f"- `{p}`" for p in report["sources"]]
    return "\n".join(lines) + "\n"
