"""The end-to-end picture a user reads in one look: per model and workload, each variant's step
speed-up over plain `torch.compile` and its compile time, from pooled `bench e2e` runs
(`kselect bench e2e-pool`'s results.json).

- Speed-up: plain's median step / the variant's (the GPU-only replayed step for prefill and
  decode, the eager step for train), with the percentile-bootstrap 90 % interval of the ratio
  (e2e_pool_stats.ratio_interval, processes resampled; none with one process a side). Above 1:
  faster than plain.
- Compile: the median over processes (kselect's one-time model load added, as the pooled report
  judges it), the bar spanning the processes' min to max.
A setup without plain has no speed-up to show and is left out, named in the returned rows.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from kselect.training.bench.e2e_pool_render import distinguishing_settings
from kselect.training.bench.e2e_pool_stats import ratio_interval

VARIANT_ORDER = ("plain", "default", "kselect-verify", "kselect-predict", "kselect-verify-fused")
STEP_SAMPLES = {"train": "step_ms_samples"}  # every other workload: the GPU-only replayed step


def _step_samples(variant: dict, workload: str) -> list[float]:
    return [float(x) for x in variant.get(STEP_SAMPLES.get(workload, "graph_step_ms_samples")) or []]


def _compile_samples(variant: dict) -> list[float]:
    load = float(variant.get("kselect_load_s") or 0.0)
    return [float(x) + load for x in variant.get("compile_s_samples") or []]


def _label(setup: dict, differs: dict) -> str:
    """The setup's model, workload and card, and the settings that tell it from a setup alike."""
    extra = ", ".join(f"{k}={v}" for k, v in differs.items())
    return f"{setup.get('model')} {setup.get('workload')}\n{setup.get('gpu')}" + (f"\n{extra}" if extra else "")


def plot_rows(pooled: dict) -> list[dict]:
    """One row per setup and variant: label, variant, processes, speed-up over plain and its
    interval (None without plain or samples), compile median / min / max."""
    rows = []
    differs = distinguishing_settings([entry["setup"] for entry in pooled["setups"]])
    for entry, setting in zip(pooled["setups"], differs):
        setup = entry["setup"]
        by_name = {v["variant"]: v for v in entry["variants"]}
        plain = _step_samples(by_name["plain"], setup["workload"]) if "plain" in by_name else []
        for name in sorted(by_name, key=lambda n: (VARIANT_ORDER + (n,)).index(n)):
            variant = by_name[name]
            steps, compiles = _step_samples(variant, setup["workload"]), _compile_samples(variant)
            speedup = interval = None
            if plain and steps:
                speedup = statistics.median(plain) / statistics.median(steps)
                if min(len(plain), len(steps)) >= 2:  # a bootstrap needs two processes a side
                    low, high = ratio_interval(steps, plain)  # the variant's step over plain's
                    interval = [1.0 / high, 1.0 / low]
            rows.append(
                {
                    "label": _label(setup, setting),
                    "variant": name,
                    "processes": variant.get("processes"),
                    "speedup": speedup,
                    "speedup_interval": interval,
                    "compile_s": statistics.median(compiles) if compiles else None,
                    "compile_range": [min(compiles), max(compiles)] if compiles else None,
                }
            )
    return rows


def draw(rows: list[dict], out: str | Path, title: str = "") -> Path:
    """Two panels side by side, one group of bars per setup (that has a speed-up to show)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["speedup"] is not None]
    labels = list(dict.fromkeys(r["label"] for r in shown))
    variants = [v for v in VARIANT_ORDER if any(r["variant"] == v for r in shown)]
    variants += sorted({r["variant"] for r in shown} - set(variants))
    if not labels:
        raise ValueError("no pooled setup holds plain and a variant with step samples: nothing to draw")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    width = 0.8 / len(variants)
    fig, (speed, compile_) = plt.subplots(1, 2, figsize=(12, 1.6 + 1.1 * len(labels)), sharey=True)
    for i, variant in enumerate(variants):
        ys, xs, errs, cs, cerrs = [], [], [[], []], [], [[], []]
        for j, label in enumerate(labels):
            row = next((r for r in shown if r["label"] == label and r["variant"] == variant), None)
            if row is None:
                continue
            ys.append(j + (i - (len(variants) - 1) / 2) * width)
            xs.append(row["speedup"])
            low, high = row["speedup_interval"] or (row["speedup"], row["speedup"])  # one process: no bar
            errs[0].append(row["speedup"] - low)
            errs[1].append(high - row["speedup"])
            cs.append(row["compile_s"] or 0.0)
            lo, hi = row["compile_range"] or (row["compile_s"] or 0.0,) * 2
            cerrs[0].append((row["compile_s"] or 0.0) - lo)
            cerrs[1].append(hi - (row["compile_s"] or 0.0))
        speed.barh(ys, [x - 1 for x in xs], left=1, height=width, xerr=errs, label=variant, capsize=2)
        compile_.barh(ys, cs, height=width, xerr=cerrs, label=variant, capsize=2)
    speed.axvline(1.0, color="black", linewidth=0.8)
    speed.set_yticks(range(len(labels)), labels)
    speed.invert_yaxis()
    speed.set_xlabel("step speed-up over plain torch.compile\n(ratio of medians, 90 % interval)")
    compile_.set_xlabel("compile s\n(median, processes' min-max)")
    compile_.legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_pooled(results: list[str | Path], out: str | Path, title: str = "") -> list[dict]:
    """Rows of every pooled results.json given (a file or the folder holding it), drawn to `out`."""
    rows = []
    for given in results:
        path = Path(given)
        path = path / "results.json" if path.is_dir() else path
        rows += plot_rows(json.loads(path.read_text()))
    draw(rows, out, title)
    return rows
