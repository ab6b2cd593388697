"""Fit the compile-cost model (selector/model/compile_time_model.py) on collected compile times, with a
cross-validated card: how well does a config alone predict its compile, and its rank?"""

from __future__ import annotations

import hashlib
import shlex
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from kselect.selector.model.compile_time_model import COMPILE_FEATURES, CompileCostModel, compile_features


class CompileDataError(ValueError):
    """Compile-time data that cannot be fitted on; the message says why."""


def read_compile_times(data: str | Path) -> pd.DataFrame:
    """Every row of every compile_times-*.csv in `data`, as collected."""
    paths = sorted(Path(data).glob("compile_times*.csv"))
    if not paths:
        raise CompileDataError(f"{data}: no compile_times-*.csv (run `kselect compile-cost collect` first)")
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def load_compile_times(data: str | Path, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ok rows of `data`'s compile times (`rows`: them as already read), one per plan
    (repeats averaged on CPU ms, which is the target)."""
    df = read_compile_times(data) if rows is None else rows
    missing = [
        c
        for c in (
            "plan_id",
            "status",
            "cpu_ms",
            "arch",
            *("template", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps"),
        )
        if c not in df
    ]
    if missing:
        raise CompileDataError(f"{data}: compile_times CSVs lack columns {missing}")
    ok = df[df.status == "ok"]
    if ok.empty:
        raise CompileDataError(f"{data}: no successful compiles to fit on")
    if ok.arch.nunique() != 1:
        raise CompileDataError(f"{data}: mixes targets {sorted(ok.arch.unique())}; one model per target")
    first = ok.drop_duplicates("plan_id").set_index("plan_id")
    first["cpu_ms"] = ok.groupby("plan_id").cpu_ms.mean()
    first["timings"] = ok.groupby("plan_id").size()
    return first.reset_index()


def _cv(X: np.ndarray, y: np.ndarray, folds: int, seed: int = 0) -> np.ndarray:
    """Out-of-fold predicted ms for every row (shuffled KFold: each plan is one row)."""
    from sklearn.model_selection import KFold

    pred = np.empty(len(y))
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(X):
        pred[test] = CompileCostModel().fit(X[train], y[train]).predict_ms(X[test])
    return pred


def repeat_noise(rows: pd.DataFrame) -> dict | None:
    """How two timings of one plan differ (plans timed in passes 0 and 1), or None."""
    df = rows[rows.status == "ok"].pivot_table(index="plan_id", columns="repeat", values="cpu_ms")
    if 0 not in df or 1 not in df:
        return None
    both = df[[0, 1]].dropna()
    if both.empty:
        return None
    ratio = both[1] / both[0]
    return {
        "plans": int(len(both)),
        "median_abs_pct_diff": float(np.median(np.abs(ratio - 1)) * 100),
        "p90_abs_pct_diff": float(np.percentile(np.abs(ratio - 1), 90) * 100),
    }


def cv_metrics(y: np.ndarray, pred: np.ndarray) -> dict:
    from scipy.stats import spearmanr

    err = pred / y - 1
    return {
        "rows": int(len(y)),
        "median_abs_pct_err": float(np.median(np.abs(err)) * 100),
        "p90_abs_pct_err": float(np.percentile(np.abs(err), 90) * 100),
        "spearman": float(spearmanr(y, pred).statistic),
        "r2_log": float(1 - np.sum((np.log(pred) - np.log(y)) ** 2) / np.sum((np.log(y) - np.log(y).mean()) ** 2)),
        "slowest_decile_found": float(np.mean(pred[y >= np.percentile(y, 90)] >= np.percentile(pred, 80))),
    }


def fit_compile_cost(data: str | Path, out: str | Path, folds: int = 5, argv: list[str] | None = None) -> dict:
    """Cross-validate, fit on everything, save the model + sidecar + card; returns the card's numbers."""
    rows = read_compile_times(data)
    df = load_compile_times(data, rows)
    X = compile_features(df.to_dict("records"))
    y = df.cpu_ms.to_numpy(dtype=np.float64)
    if len(y) < 2 * folds:
        raise CompileDataError(f"{data}: {len(y)} compiles are too few for {folds}-fold validation")
    pred = _cv(X, y, folds)
    by_template = {
        t: cv_metrics(y[m], pred[m])
        for t in sorted(df.template.unique())
        if (m := (df.template == t).to_numpy()).sum() >= 10
    }
    digest = hashlib.sha256(pd.util.hash_pandas_object(df[["plan_id", "cpu_ms"]], index=False).values.tobytes())
    meta = {
        "arch": str(df.arch.iloc[0]),
        "triton": sorted(map(str, df.triton.unique())),
        "host": sorted(map(str, df.host.unique())),
        "target": "CPU ms of one compile: thread + ptxas",
        "rows": int(len(df)),
        "dataset_hash": digest.hexdigest()[:16],
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "kselect " + shlex.join(argv) if argv else None,
        "cv": {"folds": folds, **cv_metrics(y, pred), "by_template": by_template},
        "repeat_noise": repeat_noise(rows),
        "cpu_ms_quantiles": {q: float(np.percentile(y, q)) for q in (10, 50, 90, 99)},
    }
    model = CompileCostModel().fit(X, y)
    model.save(out, meta)
    card = Path(out).with_suffix(".md")
    card.write_text(model_card(meta))
    return {"model": str(out), "card": str(card), **{k: meta[k] for k in ("rows", "cv", "repeat_noise")}}


def model_card(meta: dict) -> str:
    cv = meta["cv"]
    rows = "\n".join(
        f"| {t} | {m['rows']} | {m['median_abs_pct_err']:.1f} | {m['p90_abs_pct_err']:.1f} | {m['spearman']:.3f} |"
        for t, m in cv["by_template"].items()
    )
    noise = meta.get("repeat_noise")
    noise_line = (
        f"Timing noise: {noise['plans']} plans timed twice differ by {noise['median_abs_pct_diff']:.1f} % "
        f"at the median ({noise['p90_abs_pct_diff']:.1f} % at the 90th percentile)."
        if noise
        else "Timing noise: no plan was timed twice."
    )
    q = meta["cpu_ms_quantiles"]
    return f"""# Triton compile-cost model, {meta["arch"]}

What it predicts: the CPU milliseconds one compile of a Triton GEMM template takes (Triton's
front end, MLIR and LLVM in the compiling thread, plus ptxas), from the template's config
alone (selector/model/compile_time_model.py, features {", ".join(COMPILE_FEATURES)}). Verify uses it to
price a template before keeping it (docs/selector-design.md, "What a kept template costs to compile").

- Data: {meta["rows"]} distinct compiles of our own kernels (kernels/triton/kernels.py) for
  {meta["arch"]}, Triton {", ".join(meta["triton"])}, on {", ".join(meta["host"])}; dataset hash
  {meta["dataset_hash"]}. CPU ms quantiles: 10 % {q[10]:.0f}, median {q[50]:.0f}, 90 % {q[90]:.0f},
  99 % {q[99]:.0f}.
- Command: `{meta["command"]}`
- Inductor's own template text differs from our kernel (sizes baked in, its epilogue), so
  the absolute times are a proxy; what the policy uses is how candidates compare.

## Cross-validated ({cv["folds"]}-fold, each plan one row)

Median absolute error {cv["median_abs_pct_err"]:.1f} % (90th percentile {cv["p90_abs_pct_err"]:.1f} %),
Spearman {cv["spearman"]:.3f}, R^2 on log ms {cv["r2_log"]:.3f}. Of the slowest tenth of compiles,
{cv["slowest_decile_found"] * 100:.0f} % are predicted in the slowest fifth.

| template | compiles | median abs % err | p90 abs % err | Spearman |
| --- | --- | --- | --- | --- |
{rows}

{noise_line}
"""
