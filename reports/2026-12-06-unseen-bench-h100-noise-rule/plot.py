"""Per-GEMM kernel speed against plain torch.compile on the unseen set (NVIDIA H100): verify,
predict and stock DEFAULT, read as noise_rule.py reads them (a variant's median over its
processes against the mean of plain's four) from pooled/results.jsonl. The grey bar at each GEMM
is plain's own noise there (max/min of its processes, floored at the set's median): inside it is
a tie. Filled markers: the variant ran a Triton template (in at least one of its processes);
hollow: it kept cuBLAS (`aten:mm`) in every process.
Deterministic: the same file gives the same PNG.

    python reports/2026-12-06-unseen-bench-h100-noise-rule/plot.py   # writes per-gemm-vs-plain.png
    python .../plot.py POOLED_DIR OUT.png   # another pooled run; a variant it lacks is left out
"""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
SERIES = (
    ("kselect-verify", "kselect verify", "o", "tab:blue"),
    ("kselect-predict", "kselect predict", "s", "tab:green"),
    ("default", "stock max-autotune DEFAULT", "D", "tab:red"),
)


def main(pooled: Path = HERE / "pooled", out: Path = HERE / "per-gemm-vs-plain.png") -> Path:
    times, chosen, sizes = defaultdict(lambda: defaultdict(list)), defaultdict(lambda: defaultdict(set)), {}
    for line in (pooled / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kernel_ms") is None:
            continue
        times[r["variant"]][r["problem"]].append(r["kernel_ms"])
        chosen[r["variant"]][r["problem"]].add(r.get("chosen") or "aten:mm")
        sizes[r["problem"]] = (r["M"], r["N"], r["K"])
    plain = times["plain"]
    order = sorted(plain, key=lambda p: sizes[p])
    x = {p: i for i, p in enumerate(order)}
    floor = statistics.median(max(v) / min(v) for v in plain.values())
    noise = {p: max(max(v) / min(v), floor) for p, v in plain.items()}
    fig, ax = plt.subplots(figsize=(12, 5.2))
    ax.vlines(
        range(len(order)),
        [1 / noise[p] for p in order],
        [noise[p] for p in order],
        colors="0.8",
        linewidth=4,
        label="plain's noise",
    )
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    for variant, label, marker, colour in SERIES:
        shapes = [p for p in order if p in times[variant]]
        if not shapes:
            continue
        speed = {p: statistics.fmean(plain[p]) / statistics.median(times[variant][p]) for p in shapes}
        geo = statistics.geometric_mean(speed.values())
        for template in (True, False):
            pts = [p for p in shapes if any(c.startswith("triton") for c in chosen[variant][p]) == template]
            ax.scatter(
                [x[p] for p in pts],
                [speed[p] for p in pts],
                marker=marker,
                s=22,
                facecolors=colour if template else "none",
                edgecolors=colour,
                linewidths=1.1,
                label=f"{label}, {'Triton template' if template else 'cuBLAS'} ({len(pts)}); all {len(shapes)}: geomean {geo:.3f}x",
                zorder=3,
            )
    by_m = defaultdict(list)
    for p in order:
        by_m[sizes[p][0]].append(x[p])
    ax.set_xticks([statistics.fmean(v) for v in by_m.values()], [str(m) for m in by_m])
    for v in list(by_m.values())[1:]:
        ax.axvline(min(v) - 0.5, color="0.6", linewidth=0.7, linestyle=":")
    ax.set_xlim(-1, len(order))
    ax.set_xlabel("GEMM M (each point one GEMM of qwen2.5-7b or phi3-mini, sorted by M, N, K)")
    ax.set_ylabel("kernel speed vs plain torch.compile\n(plain's time / the variant's; > 1: faster)")
    ax.set_title(
        "The unseen set on one NVIDIA H100 80GB HBM3: each GEMM's kernel against plain torch.compile's (cuBLAS)"
    )
    ax.legend(loc="upper right", fontsize=7, frameon=True, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(*(Path(a) for a in sys.argv[1:3])))
