"""The never-widen worker's side-by-side mode (tests/selector/never_widen_worker.py `--arms`),
run on the CPU for the op a CPU lowers: each arm compiles the op in turn in one process, in the
order turned by `--shift`, each compile cold, kselect off for stock and on for its own arms, and
every arm sees the list the process's stock compile built. The GPU check
(tests/selector/test_gpu_never_widen.py) judges the compile times this mode gives on a card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

WORKER = Path(__file__).with_name("never_widen_worker.py")
sys.path.insert(0, str(WORKER.parent))
from never_widen_worker import ARMS, turned  # noqa: E402

pytestmark = pytest.mark.slow


def test_side_by_side_compiles_each_arm_in_its_turn_with_stocks_list(tmp_path):
    out = tmp_path / "result.json"
    env = dict(
        os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), TRITON_CACHE_DIR=str(tmp_path / "triton")
    )
    done = subprocess.run(
        [sys.executable, str(WORKER), "--arms", ",".join(ARMS), "--ops", "fp32_mm", "--device", "cpu",
         "--shift", "2", "--settle-pool", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    row = json.loads(out.read_text())["ops"]["fp32_mm"]
    assert row["order"] == list(turned(ARMS, 2)) == ["predict", "stock", "verify"]
    stock = row["stock"]
    assert "stats" not in stock and stock["built"] and stock["compile_s"] > 0
    for arm in ARMS:
        assert "error" not in row[arm], row[arm]["error"]
        assert row[arm]["built"] == stock["built"] == row[arm]["handed_on"], arm
        assert row[arm]["max_rel_error"] < 1e-4, (arm, row[arm]["max_rel_error"])
        assert row[arm]["pool_ready"] in (True, False, None), row[arm]["pool_ready"]
    for arm in ("verify", "predict"):  # kselect was on, and left the fp32 mm to stock
        assert row[arm]["stats"]["decisions"] == 0 and row[arm]["stats"]["fallbacks"] == 0, row[arm]["stats"]


def test_side_by_side_refuses_arms_without_stock(tmp_path):
    done = subprocess.run(
        [sys.executable, str(WORKER), "--arms", "verify,predict", "--device", "cpu", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "stock among them" in done.stderr, done.stderr
