"""Which shapes are oracle shapes: every candidate of the full space has a row.

The collector flags rows measured under `--space exhaustive`, but a shape can also be
complete without that flag (its space is smaller than a sample) or flagged yet incomplete
(a run stopped mid-shape after a crash). Compaction therefore recomputes the `oracle`
column from coverage: True on every row of a shape whose full EXHAUSTIVE + persistent-TMA
+ decompose-k (+ ATen) candidate list is measured (ok or failed, all recorded), else False.
"""

from __future__ import annotations

import pandas as pd

from kselect.kernels.candidate_list import candidate_list
from kselect.kernels.problem import Problem

BACKENDS = ("aten", "triton")


def complete_shapes(df: pd.DataFrame, backends=BACKENDS) -> set[str]:
    """Problem keys whose full candidate space has a row in `df`."""
    done = set()
    for key, sub in df.groupby("problem_key", sort=False):
        space = {
            c.key for c in candidate_list(Problem.from_dict(sub.iloc[0].to_dict()), list(backends), "exhaustive", 0)
        }
        if space and space <= set(sub["candidate_key"]):
            done.add(key)
    return done


def mark_oracle(df: pd.DataFrame, backends=BACKENDS) -> pd.DataFrame:
    """`df` with its `oracle` column recomputed from coverage (a copy)."""
    out = df.copy()
    out["oracle"] = out["problem_key"].isin(complete_shapes(df, backends))
    return out


SHAPE_CLASSES = ("m<=16", "16<m<=256", "m>256")


def shape_class(m: int) -> str:
    """The row class a GEMM's M puts it in (skinny decode, mid batches, large)."""
    return SHAPE_CLASSES[0] if m <= 16 else SHAPE_CLASSES[1] if m <= 256 else SHAPE_CLASSES[2]


def oracle_shapes_by_class(df: pd.DataFrame) -> dict[str, int]:
    """How many oracle shapes each M class holds (every class named, zeros included)."""
    shapes = df[df["oracle"]].drop_duplicates("problem_key")
    counts = shapes["M"].map(shape_class).value_counts()
    return {c: int(counts.get(c, 0)) for c in SHAPE_CLASSES}


def sample_gap(df: pd.DataFrame, n_sample: int = 200, backends=BACKENDS) -> dict:
    """On the oracle shapes: how much slower the best of the `sample:<n_sample>` subset is
    than the best of the whole space (gap = t_best_of_sample / t_best - 1), per M class and
    over all; geomean, median and max of the gap, and the shapes where it is over 1 %."""
    import numpy as np
    from scipy.stats import gmean

    from kselect.kernels.candidate_list import candidate_list

    ok = df[df["oracle"] & (df["status"] == "ok")]
    gaps: dict[str, list[float]] = {c: [] for c in SHAPE_CLASSES}
    worst = []
    for key, sub in ok.groupby("problem_key", sort=True):
        problem = Problem.from_dict(sub.iloc[0].to_dict())
        sample = {c.key for c in candidate_list(problem, list(backends), "sample", n_sample)}
        in_sample = sub[sub["candidate_key"].isin(sample)]
        if in_sample.empty:
            continue
        gap = float(in_sample["time_ms"].min() / sub["time_ms"].min() - 1.0)
        gaps[shape_class(problem.M)].append(gap)
        worst.append((gap, key))

    def stats(values: list[float]) -> dict:
        if not values:
            return {"shapes": 0}
        v = np.asarray(values)
        return {
            "shapes": int(len(v)),
            "geomean": float(gmean(1.0 + v) - 1.0),
            "median": float(np.median(v)),
            "max": float(v.max()),
            "over_1pct": int((v > 0.01).sum()),
        }

    every = [g for values in gaps.values() for g in values]
    return {
        "n_sample": n_sample,
        "all": stats(every),
        "by_class": {c: stats(v) for c, v in gaps.items()},
        "worst": [{"problem_key": k, "gap": g} for g, k in sorted(worst, reverse=True)[:5]],
    }
