"""Which shapes are oracle shapes: every candidate of the full space has a row.

The collector flags rows measured under `--space exhaustive`, but a shape can also be
complete without that flag (its space is smaller than a sample) or flagged yet incomplete
(a run stopped mid-shape after a crash). Compaction therefore recomputes the `oracle`
column from coverage: True on every row of a shape whose full EXHAUSTIVE + persistent-TMA
+ decompose-k (+ ATen) candidate list is measured (ok or failed, all recorded), else False.
"""
from __future__ import annotations

import pandas as pd

from kselect.kernels.problem import Problem

from .collect import candidate_list

BACKENDS = ("aten", "triton")


def complete_shapes(df: pd.DataFrame, backends=BACKENDS) -> set[str]:
    """Problem keys whose full candidate space has a row in `df`."""
    done = set()
    for key, sub in df.groupby("problem_key", sort=False):
        space = {c.key for c in candidate_list(Problem.from_dict(sub.iloc[0].to_dict()), list(backends), "exhaustive", 0)}
        if space and space <= set(sub["candidate_key"]):
            done.add(key)
    return done


def mark_oracle(df: pd.DataFrame, backends=BACKENDS) -> pd.DataFrame:
    """`df` with its `oracle` column recomputed from coverage (a copy)."""
    out = df.copy()
    out["oracle"] = out["problem_key"].isin(complete_shapes(df, backends))
    return out
