"""The grouped-GEMM model and its checks: fit log(time / ATen's time) per candidate over the
grouped features, pick per shape, test the routing rule of docs/grouped-mm.md on the training
data, and score picks against plain torch.compile (ATen's kernel) and stock max-autotune.

A shape is a problem without its routing (`shape_key`): the compile sees the shape only, so one
pick serves every routing of it, and every routing's own measurement judges that pick.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN
from kselect.selector.model.grouped_features import featurize_grouped

NOISE_FLOOR = 0.03  # a slowdown below 3 % is noise whatever the spreads say
SKEW_SHARE = 0.10  # the share of shapes a uniform pick may lose under skew before the robust rule
SKEWED = "zipf1.2"


def shape_key(problem: GroupedProblem) -> str:
    return problem.with_routing("uniform").key


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """A grouped dataset's timed rows, each with its problem, shape and its problem's ATen time."""
    ok = df[(df["op"] == "grouped_mm") & (df["status"] == "ok") & (df["time_ms"] > 0)].copy()
    ok["problem"] = [GroupedProblem.from_key(k) for k in ok["problem_key"]]
    ok["shape"] = [shape_key(p) for p in ok["problem"]]
    ok["routing"] = [p.routing for p in ok["problem"]]
    aten = ok[ok["candidate_key"] == ATEN.key].set_index("problem_key")["time_ms"]
    ok["aten_ms"] = ok["problem_key"].map(aten)
    return ok[ok["aten_ms"].notna()]


def slower_beyond_noise(ms: float, spread: float, base_ms: float, base_spread: float) -> bool:
    """`ms` slower than `base_ms` by more than the larger of 3 % and twice either spread."""
    return ms > base_ms * (1 + max(NOISE_FLOOR, 2 * max(spread, base_spread, 0.0)))


def features_and_target(rows: pd.DataFrame, device: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows (one per measured candidate) and log2(time / ATen's time of its problem)."""
    blocks, targets = [], []
    for _key, group in rows.groupby("problem_key", sort=True):
        cands = [Candidate.from_json(_candidate_json(r)) for _, r in group.iterrows()]
        blocks.append(featurize_grouped(group["problem"].iloc[0], cands, device))
        targets.append(np.log2(group["time_ms"].to_numpy() / group["aten_ms"].to_numpy()))
    return np.concatenate(blocks), np.concatenate(targets)


def _candidate_json(row) -> dict:
    import json

    return {"backend": row["backend"], "template": row["template"], "params": json.loads(row["params"] or "{}")}


def fit(rows: pd.DataFrame, device: Mapping, seed: int = 0, trees: int = 300):
    """A gradient-boosted regressor of the log2 gap to ATen (xgboost, as the bf16 model)."""
    import xgboost as xgb

    X, y = features_and_target(rows, device)
    model = xgb.XGBRegressor(n_estimators=trees, max_depth=6, learning_rate=0.05, subsample=0.8, random_state=seed)
    return model.fit(X, y)


def pick(model, problem: GroupedProblem, candidates: list[Candidate], device: Mapping) -> Candidate:
    """The candidate of least predicted gap, decided on the problem the compile sees (uniform)."""
    scores = model.predict(featurize_grouped(problem.with_routing("uniform"), candidates, device))
    return candidates[int(np.argmin(scores))]


def uniform_pick_loses_under_skew(rows: pd.DataFrame) -> dict:
    """The routing rule's test on measured data: per shape, the best candidate under uniform
    routing timed under Zipf 1.2 against that routing's best, beyond noise."""
    lost, shapes = [], 0
    for shape, group in rows.groupby("shape"):
        uni, skew = group[group["routing"] == "uniform"], group[group["routing"] == SKEWED]
        if uni.empty or skew.empty:
            continue
        shapes += 1
        chosen = uni.loc[uni["time_ms"].idxmin(), "candidate_key"]
        best = skew.loc[skew["time_ms"].idxmin()]
        got = skew[skew["candidate_key"] == chosen]
        if got.empty or slower_beyond_noise(
            got["time_ms"].iloc[0], got["spread"].iloc[0], best["time_ms"], best["spread"]
        ):
            lost.append(shape)
    share = len(lost) / shapes if shapes else 0.0
    return {"shapes": shapes, "lost": lost, "share": share, "robust_rule": share > SKEW_SHARE}


@dataclass(frozen=True)
class Verdict:
    problem_key: str
    kselect_ms: float
    plain_ms: float
    stock_ms: float
    slower_than_plain: bool


def bench(rows: pd.DataFrame, picks: Mapping[str, str], stock_picks: Mapping[str, Mapping]) -> list[Verdict]:
    """Each measured problem: kselect's pick (`picks`: shape key -> candidate key), plain
    torch.compile's kernel (ATen's) and stock max-autotune's pick, all read on the problem's own
    routing; a missing or failed pick reads as ATen's (where kselect sends a GEMM it cannot serve)."""
    out = []
    for key, group in rows.groupby("problem_key", sort=True):
        by_cand = group.set_index("candidate_key")
        aten = by_cand.loc[ATEN.key]
        mine = picks.get(group["shape"].iloc[0], ATEN.key)
        mine = by_cand.loc[mine] if mine in by_cand.index else aten
        stock_key = (stock_picks.get(key) or {}).get("candidate") or ATEN.key
        stock = by_cand.loc[stock_key] if stock_key in by_cand.index else aten
        out.append(
            Verdict(
                key,
                float(mine["time_ms"]),
                float(aten["time_ms"]),
                float(stock["time_ms"]),
                slower_beyond_noise(mine["time_ms"], mine["spread"], aten["time_ms"], aten["spread"]),
            )
        )
    return out


def evaluate(
    train: pd.DataFrame,
    unseen: pd.DataFrame,
    device: Mapping,
    stock_picks: Mapping,
    seed: int = 0,
    trees: int = 300,
    model=None,
) -> dict:
    """Fit on `train` (or take the fitted `model`), pick each unseen shape from the shape alone,
    and score the picks on every unseen routing against plain and stock (the acceptance's speed
    half). For its tuning half, the compile seconds of stock and of the compile keeping one
    choice (`stock_picks`)."""
    train_rows, unseen_rows = measured(train), measured(unseen)
    model = model if model is not None else fit(train_rows, device, seed, trees)
    picks = {}
    for shape, group in unseen_rows.groupby("shape"):
        cands = [Candidate.from_json(_candidate_json(r)) for _, r in group.drop_duplicates("candidate_key").iterrows()]
        picks[shape] = pick(model, GroupedProblem.from_key(shape), cands, device).key
    verdicts = bench(unseen_rows, picks, stock_picks)
    ratio = lambda a, b: float(np.exp(np.mean(np.log([x / y for x, y in zip(a, b)]))))  # noqa: E731
    return {
        "routing_rule": uniform_pick_loses_under_skew(train_rows),
        "problems": len(verdicts),
        "slower_than_plain": [v.problem_key for v in verdicts if v.slower_than_plain],
        "geomean_speedup_vs_plain": ratio([v.plain_ms for v in verdicts], [v.kselect_ms for v in verdicts]),
        "geomean_speedup_vs_stock": ratio([v.stock_ms for v in verdicts], [v.kselect_ms for v in verdicts]),
        "stock_compile_s": sorted(float(r.get("compile_s", 0)) for r in stock_picks.values()),
        "one_kept_compile_s": sorted(float(r.get("one_kept_s", 0)) for r in stock_picks.values()),
        "picks": picks,
    }
