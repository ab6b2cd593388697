"""Headroom capture per dtype on a real slice of the H100's fp16 / TF32 / fp32 data: each
dtype's figures are its own shapes' alone, and `kselect evaluate`'s text prints them."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kselect.selector.model.features import featurize_frame
from kselect.training.cli.evaluate import headroom_lines
from kselect.training.learn.baselines import RooflineRanker
from kselect.training.learn.headroom import (
    capture_stats,
    headroom_section,
    shape_table,
    simulate_policies,
    templates_plus_aten,
)
from kselect.training.learn.ranking_metrics import ShapeSet

DATA = Path(__file__).resolve().parents[2] / "data" / "h100-dtypes" / "data"
PER_DTYPE = 4  # shapes of each dtype in the slice


@pytest.fixture(scope="module")
def section():
    """The first PER_DTYPE shapes of each dtype with M >= 64 whose best candidate beats ATen,
    ranked by the roofline baseline (no training), held out in two folds; returns (shapes,
    cost, headroom_section)."""
    df = pd.read_parquet(DATA / "measurements.parquet")
    fp = json.loads((DATA / "fingerprint.json").read_text())
    ok = df[df["status"] == "ok"]
    per = ok.groupby("problem_key").agg(best=("time_ms", "min"), dtype=("dtype", "first"), M=("M", "first"))
    per["aten"] = ok[ok["backend"] == "aten"].groupby("problem_key")["time_ms"].min()
    per = per[(per["aten"] > per["best"]) & (per["M"] >= 64)].sort_index()
    keep = per.groupby("dtype").head(PER_DTYPE).index
    # stock DEFAULT's list is not what this tests: ATen alone stands for it (no Inductor import)
    shapes = ShapeSet.from_frame(df[df["problem_key"].isin(keep)], default_keys=lambda r: set())
    cost = RooflineRanker().cost(shapes, featurize_frame(shapes.rows, fp))
    half = np.arange(shapes.n_shapes) % 2 == 0
    return shapes, cost, headroom_section(shapes, {"cost_model": cost}, [("a", half), ("b", ~half)], aten_gap=True)


def test_each_dtype_is_scored_on_its_own_shapes(section):
    """Catches: dtypes pooled into one capture, a dtype's mask taking another's shapes, or a
    policy's per-dtype capture read from another selection."""
    shapes, cost, sec = section
    by_dtype = sec["realistic"]["dtypes"]
    assert list(by_dtype) == ["fp16", "fp32", "tf32"]
    dtype = shapes.rows["dtype"].astype(str).to_numpy()[shapes.starts]
    aten_plus_4 = templates_plus_aten(shapes, cost, 4)
    verify = simulate_policies(shapes, cost)["verify"]
    for d, got in by_dtype.items():
        mine = dtype == d
        mine &= ~shape_table(shapes)["decision_free"]
        assert got["shapes"] == mine.sum() > 0
        assert got["headroom_log_sum"] == pytest.approx(np.log(shapes.aten_time / shapes.best)[mine].sum())
        want = capture_stats(shapes.aten_time[mine], shapes.best[mine], aten_plus_4[mine])["capture"]
        assert got["aten_plus_k"]["cost_model"][4] == pytest.approx(want)
        want = capture_stats(shapes.aten_time[mine], shapes.best[mine], verify[mine])["capture"]
        assert got["verify"] == pytest.approx(want)
        assert got["fixed"]["always_aten"] == 0.0
    # the split is not one figure copied three times
    assert len({round(v["headroom_log_sum"], 9) for v in by_dtype.values()}) == 3
    assert len({round(v["aten_plus_k"]["cost_model"][4], 9) for v in by_dtype.values()}) > 1


def test_evaluate_prints_the_per_dtype_line(section):
    _, _, sec = section
    lines = headroom_lines({"family": sec})
    (line,) = [x for x in lines if x.startswith("  per dtype")]
    for d, v in sec["realistic"]["dtypes"].items():
        assert f"{d} {v['shapes']} shapes" in line
        assert f"ATen + 4 {100 * v['aten_plus_k']['cost_model'][4]:.1f}%" in line
    one = ShapeSet.from_frame(section[0].rows[section[0].rows["dtype"] == "fp16"], default_keys=lambda r: set())
    alone = headroom_section(one, {"cost_model": one.time}, [], aten_gap=False)
    assert "dtypes" not in alone["realistic"]  # one dtype: no split, as before
