"""The labels the cost model learns: collector times, with Inductor's kernels' times where
`kselect retime` measured them (training/measure/retime.py says why they differ).

Per shape and template with re-timed candidates:
- each re-timed candidate takes its re-timed time (ATen too: both were timed side by side);
- the template's other candidates, timed by the collector only, are scaled by the median
  re-timed / collector ratio of that template on that shape. Re-timing covers the collector's
  fastest candidates; leaving the rest unscaled would let a collector-only candidate that
  shares the same kernel-code gap overtake the re-timed ones, an artefact of which were
  re-timed rather than a measurement.
A re-timed row that failed (Inductor's kernel did not run, or ran wrong) leaves its collector
row as it is; `retime_summary` counts them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TIME_COLUMNS = ("time_ms", "time_min_ms", "time_max_ms")
RETIMED_METHOD_PREFIX = "inductor-kernel/"


def apply_retimed(df: pd.DataFrame, retimed: pd.DataFrame) -> pd.DataFrame:
    """A copy of collector rows `df` with the re-timed labels folded in (see module doc)."""
    out = df.copy()
    ok = retimed[(retimed["status"] == "ok") & (retimed["time_ms"] > 0)]
    if not len(ok):
        return out
    key = pd.MultiIndex.from_frame(out[["problem_key", "candidate_key"]])
    new = ok.set_index(["problem_key", "candidate_key"])
    hit = key.isin(new.index) & (out["status"] == "ok").to_numpy() & (out["time_ms"] > 0).to_numpy()
    src = new.reindex(key[hit])
    ratio = src["time_ms"].to_numpy() / out.loc[hit, "time_ms"].to_numpy()
    # the median ratio per (shape, template) of the re-timed candidates
    groups = pd.DataFrame(
        {
            "problem_key": out.loc[hit, "problem_key"].to_numpy(),
            "bt": (out.loc[hit, "backend"] + ":" + out.loc[hit, "template"]).to_numpy(),
            "ratio": ratio,
        }
    )
    med = groups.groupby(["problem_key", "bt"])["ratio"].median()
    for col in TIME_COLUMNS:
        values = src[col].to_numpy(dtype=np.float64)
        if col != "time_ms":  # a re-timed row without spread stats keeps a scaled collector value
            values = np.where(np.isfinite(values), values, out.loc[hit, col].to_numpy() * ratio)
        out.loc[hit, col] = values
    out.loc[hit, "method"] = RETIMED_METHOD_PREFIX + src["method"].astype(str).to_numpy()
    out.loc[hit, "spread"] = src["spread"].to_numpy()
    rest = ~hit & (out["status"] == "ok").to_numpy()
    gkey = pd.MultiIndex.from_arrays([out["problem_key"], out["backend"] + ":" + out["template"]])
    scale = pd.Series(med.reindex(gkey).to_numpy(), index=out.index)
    scaled = rest & scale.notna().to_numpy()
    for col in TIME_COLUMNS:
        out.loc[scaled, col] = out.loc[scaled, col] * scale[scaled]
    return out


def retime_summary(df: pd.DataFrame, retimed: pd.DataFrame) -> dict:
    """How the re-timing moved the labels: rows replaced and scaled, the ratio's spread, the
    shapes whose best label changed backend, and re-timed rows that failed."""
    after = apply_retimed(df, retimed)
    ok = retimed[retimed["status"] == "ok"]
    merged = ok.merge(
        df[["problem_key", "candidate_key", "time_ms", "backend", "template"]],
        on=["problem_key", "candidate_key"],
        suffixes=("", "_collector"),
    )
    merged = merged[merged["time_ms_collector"] > 0]
    ratios = merged["time_ms"] / merged["time_ms_collector"]

    def best_backend(frame):
        f = frame[(frame["status"] == "ok") & (frame["time_ms"] > 0)]
        idx = f.groupby("problem_key")["time_ms"].idxmin()
        return f.loc[idx].set_index("problem_key")["backend"] + ":" + f.loc[idx].set_index("problem_key")["template"]

    b0, b1 = best_backend(df), best_backend(after)
    shapes = sorted(set(retimed["problem_key"]))
    changed = [p for p in shapes if p in b0.index and p in b1.index and b0[p] != b1[p]]
    by_template = {}
    for bt, r in ratios.groupby(merged["backend"] + ":" + merged["template"]):
        by_template[bt] = {
            "rows": int(len(r)),
            "median": float(r.median()),
            "p10": float(r.quantile(0.1)),
            "p90": float(r.quantile(0.9)),
        }
    return {
        "shapes": len(shapes),
        "rows_retimed_ok": int(len(merged)),
        "rows_failed": {k: int(v) for k, v in retimed[retimed["status"] != "ok"]["status"].value_counts().items()},
        "rows_scaled": int(
            ((after["time_ms"] != df["time_ms"]) & ~after["method"].str.startswith(RETIMED_METHOD_PREFIX)).sum()
        ),
        "ratio_retimed_over_collector": by_template,
        "best_changed": {p: f"{b0[p]} -> {b1[p]}" for p in changed},
    }
