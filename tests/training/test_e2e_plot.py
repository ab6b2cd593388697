"""The end-to-end picture (training/bench/e2e_plot.py): speed-up over plain from pooled samples,
with an interval that holds the ratio, compile with the model load, setups without plain left
out, and the committed pooled H200 report drawn by the CLI."""

from __future__ import annotations

import pytest

from kselect.training.bench import e2e_plot

from conftest import REPO


def _variant(name: str, steps: list[float], compiles: list[float], load: float = 0.0) -> dict:
    return {
        "variant": name,
        "processes": len(steps),
        "graph_step_ms_samples": steps,
        "step_ms_samples": [s * 1.1 for s in steps],
        "compile_s_samples": compiles,
        **({"kselect_load_s": load} if load else {}),
    }


def _setup(workload: str, variants: list[dict], **settings) -> dict:
    setup = {"gpu": "NVIDIA H100", "model": "m", "workload": workload, "settings": {"k": 4, **settings}}
    return {"setup": setup, "variants": variants}


def test_speedup_and_compile_come_from_the_samples():
    pooled = {
        "setups": [
            _setup(
                "decode",
                [
                    _variant("kselect-verify", [1.0, 1.01, 0.99], [9.0, 10.0, 11.0], load=0.5),
                    _variant("plain", [2.0, 2.02, 1.98], [8.0, 8.0, 8.0]),
                ],
            ),
            _setup("decode", [_variant("kselect-verify", [1.0], [1.0])], k=2),  # no plain
        ]
    }
    rows = e2e_plot.plot_rows(pooled)
    verify = next(r for r in rows if r["variant"] == "kselect-verify" and r["speedup"] is not None)
    assert verify["speedup"] == pytest.approx(2.0)
    low, high = verify["speedup_interval"]
    assert low <= 2.0 <= high and high / low < 1.1
    assert verify["compile_s"] == pytest.approx(10.5) and verify["compile_range"] == pytest.approx([9.5, 11.5])
    assert [r["variant"] for r in rows if "k=4" in r["label"]] == ["plain", "kselect-verify"]  # plain first
    k2 = [r for r in rows if "k=2" in r["label"]]  # two decode setups: the setting tells them apart
    assert k2 and all(r["speedup"] is None for r in k2) and "k=4" in verify["label"]


def test_the_train_step_is_the_eager_step(tmp_path):
    pooled = {"setups": [_setup("train", [_variant("plain", [2.0], [1.0]), _variant("default", [1.0], [1.0])])]}
    default = next(r for r in e2e_plot.plot_rows(pooled) if r["variant"] == "default")
    assert default["speedup"] == pytest.approx(2.0)  # step_ms_samples: both scaled alike
    assert default["speedup_interval"] is None  # one process a side: no interval
    e2e_plot.draw([default], tmp_path / "one.png")


def test_nothing_to_draw_is_said(tmp_path):
    with pytest.raises(ValueError, match="nothing to draw"):
        e2e_plot.draw([], tmp_path / "x.png")


def test_the_committed_pooled_report_is_drawn(tmp_path, capsys):
    from kselect.training.cli.main import main

    out = tmp_path / "e2e.png"
    assert (
        main(["bench", "e2e-plot", str(REPO / "reports/2026-12-05-e2e-h200-pooled/8-layers"), "--out", str(out)]) == 0
    )
    assert out.stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "kselect-verify" in printed and "left out" in printed
