"""Each variant's effect on a time, with one term per run: a two-way fixed-effects least-squares fit.

Why: hosts differ (step times by ~1 %, compile by 20 % and more), so variants compare best
within a run. Ratios within runs use a run only where both variants of a comparison ran,
and pairs only complete rounds. This fit uses every process of a setup at once. A run with
DEFAULT and verify informs verify against predict through another run that has verify and
predict. Its residual is the spread between processes of one variant on one host: how many
processes a gap of a given size needs before it shows.

The model: value = run term + variant term + noise, with the baseline's term 0. A variant's
term is identified only when it connects to the baseline through shared runs; the others
are left out, not guessed.
"""

from __future__ import annotations

from collections.abc import Iterable


def connected(rows: list[tuple], baseline: str) -> set:
    """The variants reachable from `baseline` through runs that hold both (rows: run, variant, value)."""
    by_run: dict = {}
    for run, variant, _ in rows:
        by_run.setdefault(run, set()).add(variant)
    reached, frontier = {baseline}, [baseline]
    while frontier:
        v = frontier.pop()
        for members in by_run.values():
            if v in members:
                for w in members - reached:
                    reached.add(w)
                    frontier.append(w)
    return reached


def fit_effects(rows: Iterable[tuple], baseline: str) -> dict | None:
    """rows: (run, variant, value). Returns the baseline, per other variant its processes, its
    term over the baseline (`diff`), standard error and t, the residual standard deviation
    and its degrees of freedom; None without the baseline or without another variant joined
    to it. A standard error needs a residual degree of freedom (else None)."""
    import numpy as np

    rows = [r for r in rows if r[2] is not None]
    if not any(v == baseline for _, v, _ in rows):
        return None
    keep = connected(rows, baseline)
    rows = [r for r in rows if r[1] in keep]
    variants = sorted(keep - {baseline})
    if not variants:
        return None
    runs = sorted({r[0] for r in rows}, key=str)
    X = np.array(
        [[float(run == r) for r in runs] + [float(variant == v) for v in variants] for run, variant, _ in rows]
    )
    y = np.array([value for _, _, value in rows], dtype=float)
    beta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    dof = len(y) - rank
    resid = y - X @ beta
    sd = float(np.sqrt(resid @ resid / dof)) if dof > 0 else None
    var = np.diag(np.linalg.pinv(X.T @ X)) * sd**2 if sd is not None else None
    effects = []
    for j, v in enumerate(variants, start=len(runs)):
        se = float(np.sqrt(var[j])) if var is not None else None
        diff = float(beta[j])
        effects.append(
            {
                "variant": v,
                "processes": sum(1 for r in rows if r[1] == v),
                "diff": diff,
                "se": se,
                "t": diff / se if se else None,
            }
        )
    return {
        "baseline": baseline,
        "baseline_processes": sum(1 for r in rows if r[1] == baseline),
        "runs": len(runs),
        "effects": effects,
        "residual_sd": sd,
        "dof": int(dof),
    }
