"""How sure a headroom capture, and a difference of two, is: a bootstrap over shapes.

Capture is a ratio of sums over shapes (training/learn/headroom.py). Resampling the shapes with
replacement -- the same resamples for every selection, so differences are paired -- gives each
capture's percentile interval and each selection's difference from a reference selection.
A selection given once per training seed (one row of pick times per seed) counts each shape's
gain averaged over its seeds, and each resample also draws that selection's seeds with
replacement, so its interval covers the training seed as well as the choice of shapes.
A difference is `within_noise` when its interval reaches zero or above: the selection is not
worse than the reference beyond what the shapes (and seeds) explain.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from kselect.training.learn.headroom import simulate_policies, templates_plus_aten
from kselect.training.learn.ranking_metrics import ShapeSet

CONFIDENCE = 0.95
RESAMPLES = 2000
SELECTION_KS = (1, 4)


def selection_picks(
    shapes: ShapeSet, cost: np.ndarray, near_cost: np.ndarray | None = None, aten_gap: bool = True, ks=SELECTION_KS
) -> dict[str, np.ndarray]:
    """Per shape the measured time each selection of a ranking keeps: ATen + its first k
    templates ('aten+k'), and for an ATen-relative model verify and predict as the selector runs
    them (headroom.simulate_policies; `near_cost`: verify's nearest-shape slot)."""
    out = {f"aten+{k}": templates_plus_aten(shapes, cost, k) for k in ks}
    if aten_gap:
        sim = simulate_policies(shapes, cost, near_cost=near_cost)
        out["verify"], out["predict"] = sim["verify"], sim["predict"]
    return out


def _seed_gains(aten: np.ndarray, pick: np.ndarray) -> np.ndarray:
    """log(t_ATen / t_pick), one row per training seed (a 1-D pick array is one seed)."""
    pick = np.atleast_2d(np.asarray(pick, dtype=np.float64))
    return np.log(aten / np.where(np.isfinite(pick), pick, aten))  # a failed pick falls back to ATen


def _gains(aten: np.ndarray, pick: np.ndarray) -> np.ndarray:
    """Each shape's gain averaged over the seeds (its capture is the mean of the seeds' captures)."""
    return _seed_gains(aten, pick).mean(axis=0)


def bootstrap_captures(
    aten: np.ndarray,
    best: np.ndarray,
    picks: Mapping[str, np.ndarray],
    reference: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict:
    """{"captures": {selection: {capture, interval, sd}}, "differences": {selection: {difference,
    interval, share_of_resamples_worse, within_noise}}} over the shapes of `aten`, `best` and
    each pick array (per shape times, or one row of them per training seed: _gains);
    differences are selection - `reference`."""
    aten, best = np.asarray(aten, dtype=np.float64), np.asarray(best, dtype=np.float64)
    n = len(aten)
    if n == 0 or len(best) != n or any(np.shape(p)[-1] != n for p in picks.values()):
        raise ValueError(f"need one time per shape in every array ({n} shapes)")
    if reference is not None and reference not in picks:
        raise ValueError(f"reference selection {reference!r} is not among {sorted(picks)}")
    room = np.log(aten / best)
    if room.sum() <= 0:
        raise ValueError("these shapes hold no headroom: capture is undefined")
    per_seed = {name: _seed_gains(aten, p) for name, p in picks.items()}
    gains = {name: g.mean(axis=0) for name, g in per_seed.items()}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    room_b = room[idx].sum(axis=1)
    usable = room_b > 0  # a resample without headroom has no capture
    room_b = room_b[usable]
    gain_b = {}
    for name, g in per_seed.items():
        sums = g[:, idx].sum(axis=2)  # (seeds, resamples): each seed's gain over each resample's shapes
        drawn = rng.integers(0, len(g), size=(resamples, len(g)))  # the seeds each resample draws
        gain_b[name] = sums[drawn, np.arange(resamples)[:, None]].mean(axis=1)[usable]
    tail = 100 * (1 - confidence) / 2

    def interval(values: np.ndarray) -> list[float]:
        return [float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))]

    out: dict = {"shapes": n, "resamples": int(usable.sum()), "confidence": confidence, "captures": {}}
    for name, g in gains.items():
        cap_b = gain_b[name] / room_b
        out["captures"][name] = {
            "capture": float(g.sum() / room.sum()),
            "interval": interval(cap_b),
            "sd": float(cap_b.std(ddof=1)),
        }
    if reference is not None:
        out["reference"] = reference
        out["differences"] = {}
        for name, g in gains.items():
            if name == reference:
                continue
            diff_b = (gain_b[name] - gain_b[reference]) / room_b
            lo_hi = interval(diff_b)
            out["differences"][name] = {
                "difference": float((g.sum() - gains[reference].sum()) / room.sum()),
                "interval": lo_hi,
                "share_of_resamples_worse": float(np.mean(diff_b < 0)),
                "within_noise": bool(lo_hi[1] >= 0),
            }
    return out


def group_captures(
    aten: np.ndarray, best: np.ndarray, picks: Mapping[str, np.ndarray], groups: np.ndarray
) -> dict[str, dict[str, float | None]]:
    """Capture of each selection within each group of shapes (e.g. a held-out family): the
    fold-to-fold spread beside the bootstrap. None where a group holds no headroom."""
    aten, best, groups = np.asarray(aten, dtype=np.float64), np.asarray(best, dtype=np.float64), np.asarray(groups)
    room = np.log(aten / best)
    out: dict = {}
    for name, p in picks.items():
        g = _gains(aten, p)
        out[name] = {
            str(grp): (
                float(g[groups == grp].sum() / room[groups == grp].sum()) if room[groups == grp].sum() > 0 else None
            )
            for grp in np.unique(groups)
        }
    return out
