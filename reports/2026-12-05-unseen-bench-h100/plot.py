"""Per-GEMM kernel speed against plain torch.compile on the unseen set (NVIDIA H100): verify,
predict and stock DEFAULT, as pool_vs_plain.py reads them -- each GEMM's mean kernel time over
a variant's processes against the mean of plain's two -- from pooled/results.jsonl. The grey bar
at each GEMM is plain's own noise there (max/min of its two processes): a point inside it is a
tie. Each variant's geomean is checked against vs-plain.json before anything is drawn.
Deterministic: the same files give the same PNG (no timestamp or version in its metadata).

    python reports/2026-12-05-unseen-bench-h100/plot.py   # writes per-gemm-vs-plain.png beside it
"""

import json
import statistics
from collections import defaultdict
from math import exp, log
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
SERIES = (  # variant, label, marker, colour
    ("kselect-verify", "kselect verify", "o", "tab:blue"),
    ("kselect-predict", "kselect predict", "s", "tab:green"),
    ("default", "stock max-autotune DEFAULT", "x", "tab:red"),
)


def kernel_times() -> dict:
    """variant -> problem -> kernel ms of each process, the rows pool_vs_plain.py keeps."""
    times = defaultdict(lambda: defaultdict(list))
    sizes = {}
    for line in (HERE / "pooled" / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kernel_ms") is None or not r.get("correct", True):
            continue
        times[r["variant"]][r["problem"]].append(r["kernel_ms"])
        sizes[r["problem"]] = (r["M"], r["N"], r["K"])
    return times, sizes


def main() -> Path:
    times, sizes = kernel_times()
    plain = {p: v for p, v in times["plain"].items() if len(v) >= 2}
    order = sorted(plain, key=lambda p: sizes[p])
    x = {p: i for i, p in enumerate(order)}
    plain_mean = {p: statistics.fmean(v) for p, v in plain.items()}
    noise = {p: max(v) / min(v) for p, v in plain.items()}
    expected = json.loads((HERE / "vs-plain.json").read_text())["vs_plain"]
    card = json.loads((HERE / "vs-plain.json").read_text())["card"]

    fig, ax = plt.subplots(figsize=(12, 5.2))
    ax.vlines(
        [x[p] for p in order],
        [1 / noise[p] for p in order],
        [noise[p] for p in order],
        colors="0.75",
        linewidth=4,
        label="plain's own noise (max/min of its 2 processes)",
    )
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    for variant, label, marker, colour in SERIES:
        shapes = [p for p in order if p in times[variant]]
        speed = {p: plain_mean[p] / statistics.fmean(times[variant][p]) for p in shapes}  # > 1: faster
        geomean = exp(statistics.fmean(log(s) for s in speed.values()))
        want = expected[variant]["speedup_geomean_vs_plain"]
        if abs(geomean - want) > 1e-9 or len(shapes) != expected[variant]["shapes"]:
            raise SystemExit(f"{variant}: {len(shapes)} GEMMs, geomean {geomean}, but vs-plain.json says {want}")
        ax.scatter(
            [x[p] for p in shapes],
            [speed[p] for p in shapes],
            marker=marker,
            s=22,
            color=colour,
            facecolors="none" if marker == "s" else None,
            linewidths=1.1,
            label=f"{label}: {len(shapes)} GEMMs, geomean {geomean:.3f}x",
            zorder=3,
        )
    # one tick per M, at the middle of its GEMMs; a dotted line between Ms
    by_m = defaultdict(list)
    for p in order:
        by_m[sizes[p][0]].append(x[p])
    ax.set_xticks([statistics.fmean(v) for v in by_m.values()], [str(m) for m in by_m])
    for v in list(by_m.values())[1:]:
        ax.axvline(min(v) - 0.5, color="0.6", linewidth=0.7, linestyle=":")
    ax.set_yscale("log")
    ax.set_yticks([0.6, 0.7, 0.8, 0.9, 1.0, 1.1], ["0.6x", "0.7x", "0.8x", "0.9x", "1.0x", "1.1x"])
    ax.minorticks_off()
    ax.set_xlim(-1, len(order))
    ax.set_xlabel("GEMM M (each point one GEMM of qwen2.5-7b or phi3-mini, sorted by M, N, K)")
    ax.set_ylabel("kernel speed vs plain torch.compile\n(plain's time / the variant's; > 1: faster)")
    ax.set_title(f"The unseen set on one {card}: each GEMM's kernel against plain torch.compile's (cuBLAS)")
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    fig.tight_layout()
    out = HERE / "per-gemm-vs-plain.png"
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main())
