"""`kselect bench gemm`'s numbers over its rows: a shape measured in several processes at its
medians (combine_repeats), and the variants side by side with the targets (summarize)."""

from __future__ import annotations

import math
import statistics


def _geomean(xs) -> float:
    """Geometric mean of the positive, finite values (NaN when there are none)."""
    from scipy.stats import gmean

    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return float(gmean(xs)) if xs else float("nan")


def _phase_medians(rows: list) -> dict:
    """Median per GEMM of each decision phase (ms per decision): where the decision time goes."""
    names = sorted({n for r in rows for n in r.get("decision_phases_ms", {})})
    return {n: statistics.median(r["decision_phases_ms"].get(n, 0.0) / r["decisions"] for r in rows) for n in names}


_MEDIAN_FIELDS = ("kernel_ms", "compile_s", "benchmarked", "decision_ms", "decision_cpu_ms", "setup_ms")


def combine_repeats(rows: list[dict]) -> list[dict]:
    """One row per (variant, shape): a shape measured in several processes (--repeats, or
    pooled runs) gets the median of its numbers, every kernel time in `kernel_ms_samples`,
    the kernel chosen most often in `chosen` and each process's in `chosen_all`. Stock
    DEFAULT's pick varies between processes; the median is its typical result, not one draw.
    Errors and skips stand only where a shape has no measurement for the variant."""
    measured: dict = {}
    for r in rows:
        if "kernel_ms" in r:
            measured.setdefault((r["variant"], r["problem"]), []).append(r)
    out, seen = [], set()
    for r in rows:
        key = (r.get("variant"), r.get("problem"))
        if key in seen or ("kernel_ms" not in r and key in measured):
            continue
        seen.add(key)
        group = measured.get(key)
        if not group or len(group) == 1:
            out.append(r)
            continue
        row = dict(group[0])
        for f in _MEDIAN_FIELDS:
            vals = [g[f] for g in group if isinstance(g.get(f), (int, float))]
            if vals:
                row[f] = statistics.median(vals)
        names = {n for g in group for n in g.get("decision_phases_ms", {})}
        if names:
            row["decision_phases_ms"] = {
                n: statistics.median(g.get("decision_phases_ms", {}).get(n, 0.0) for g in group) for n in sorted(names)
            }
        picks = [g.get("chosen", "") for g in group]
        row.update(
            repeats=len(group),
            correct=all(g.get("correct") for g in group),
            kernel_ms_samples=[g["kernel_ms"] for g in group],
            chosen_all=picks,
            chosen=max(dict.fromkeys(picks), key=picks.count),
        )
        out.append(row)
    return out


def summarize(rows: list[dict]) -> dict:
    """Side-by-side ratios over the shapes every compared variant measured correctly (a shape
    measured in several processes counts once, at its medians: combine_repeats)."""
    by = {}
    for r in combine_repeats(rows):
        if "kernel_ms" in r and r.get("correct"):
            by.setdefault(r["variant"], {})[r["problem"]] = r
    plain = by.get("plain", {})

    def tuning(r):
        base = plain.get(r["problem"])
        return max(r["compile_s"] - base["compile_s"], 1e-3) if base else float("nan")

    def ratio(num, den, field):
        a, b = by.get(num, {}), by.get(den, {})
        common = sorted(set(a) & set(b))
        vals = [(tuning(a[p]) / tuning(b[p])) if field == "tuning" else a[p][field] / b[p][field] for p in common]
        return {"shapes": len(common), "geomean": _geomean(vals)}

    s: dict = {"variants": {}}
    for v, rs in by.items():
        rr = list(rs.values())
        s["variants"][v] = {
            "shapes": len(rr),
            "compile_s_median": statistics.median(r["compile_s"] for r in rr),
            "tuning_s_total": sum(tuning(r) for r in rr) if plain else float("nan"),
            "benchmarked_total": sum(r.get("benchmarked", 0) for r in rr),
            "fallbacks": sum(r.get("fallbacks", 0) for r in rr),
            "decision_ms_max": max(
                (r["decision_ms"] / r["decisions"] for r in rr if r.get("decisions")), default=float("nan")
            ),
            "decision_ms_median": statistics.median(
                [r["decision_ms"] / r["decisions"] for r in rr if r.get("decisions")] or [float("nan")]
            ),
            "decision_phases_ms_median": _phase_medians([r for r in rr if r.get("decisions")]),
            "setup_ms_median": statistics.median(
                [r.get("setup_ms", 0.0) for r in rr if r.get("decisions")] or [float("nan")]
            ),
            "setup_ms_max": max((r.get("setup_ms", 0.0) for r in rr if r.get("decisions")), default=float("nan")),
        }
    s["kernel_time_ratio"] = {
        f"{a}/{b}": ratio(a, b, "kernel_ms")
        for a, b in (
            ("kselect-verify", "exhaustive"),
            ("kselect-predict", "exhaustive"),
            ("default", "exhaustive"),
            ("kselect-verify", "default"),
            ("kselect-predict", "default"),
            ("plain", "default"),
        )
    }
    s["tuning_time_ratio"] = {
        f"{a}/{b}": ratio(a, b, "tuning")
        for a, b in (
            ("kselect-verify", "default"),
            ("kselect-verify", "exhaustive"),
            ("kselect-predict", "default"),
            ("default", "exhaustive"),
        )
    }
    kt, tt = s["kernel_time_ratio"], s["tuning_time_ratio"]
    s["targets"] = {
        "verify kernel within 1% of EXHAUSTIVE (geomean ratio <= 1.01)": _check(
            kt["kselect-verify/exhaustive"]["geomean"], lambda x: x <= 1.01
        ),
        "verify >= 1.05x faster than DEFAULT's picks (ratio <= 1/1.05)": _check(
            kt["kselect-verify/default"]["geomean"], lambda x: x <= 1 / 1.05
        ),
        "verify tuning <= 1/3 of DEFAULT's": _check(tt["kselect-verify/default"]["geomean"], lambda x: x <= 1 / 3),
        "verify tuning <= 1/20 of EXHAUSTIVE's": _check(
            tt["kselect-verify/exhaustive"]["geomean"], lambda x: x <= 1 / 20
        ),
        "predict decision <= 5 ms per GEMM": _check(
            s["variants"].get("kselect-predict", {}).get("decision_ms_max", float("nan")), lambda x: x <= 5.0
        ),
    }
    return s


def _check(value: float, ok) -> list:
    return [value, None if value != value else bool(ok(value))]
