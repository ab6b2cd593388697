"""On an sm_90 GPU: an op kselect does not decide compiles exactly as stock -- the same choices
built and benchmarked, correct, and no slower to compile (median of 3 cold processes per arm).

Each arm runs tests/selector/never_widen_worker.py in its own cold process (fresh Inductor and
Triton cache folders, Inductor's compile threads as the user's environment has them, not the
test run's one thread), compiling as a user would (`torch.compile(mode="max-autotune-no-cudagraphs")`,
Inductor's settings untouched: the user's DEFAULT space). The arms' order turns each repeat
(stock, verify, predict; verify, predict, stock; predict, stock, verify), so that no arm always
runs on a card its predecessors heated: a compile's benchmarking runs at the card's clocks, and
on the H100 a process run third read up to 1.4x slower than one run first
(reports/2026-12-07-never-widen-h100). Each process is held against the stock process of its own
repeat. The ops: fp8 `_scaled_mm` rowwise and tensorwise and `_grouped_mm`
(no shipped model holds them), `_int_mm`, an IEEE fp32 mm (no shipped model decides fp32), and a
bf16 mm, which kselect decides (the contrast). The CPU half: tests/selector/test_op_kinds.py.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from gpu_model import sm90_marks

from conftest import with_inductor_pool

pytestmark = sm90_marks()

WORKER = Path(__file__).with_name("never_widen_worker.py")
UNDECIDED = ("scaled_mm_rowwise", "scaled_mm_tensorwise", "grouped_mm", "int_mm", "fp32_mm")
ARMS = ("stock", "verify", "predict")
REPEATS = 3


def arm_order(repeat: int) -> tuple[str, ...]:
    """The arms in the order repeat `repeat` runs them: turned by one each repeat."""
    shift = repeat % len(ARMS)
    return ARMS[shift:] + ARMS[:shift]


COMPILE_RATIO = 1.1  # kselect's median compile against stock's, per op and arm
# a folder of records made earlier (ARM-REPEAT/result.json, by this fixture or by running the
# worker so): those are read, the missing ones run and written there -- a device call of at most
# 10 minutes holds about two repeats of the three arms
RECORDS = os.environ.get("KSELECT_NEVER_WIDEN_RECORDS")


def _run(arm: str, repeat: int, root: Path) -> dict:
    folder = root / f"{arm}-{repeat}"
    out = folder / "result.json"
    if out.exists():
        return json.loads(out.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    caches = Path(tempfile.mkdtemp(prefix=f"never-widen-{arm}-{repeat}-"))  # cold: fresh folders
    env = with_inductor_pool(
        dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"), TRITON_CACHE_DIR=str(caches / "triton"))
    )
    ops = ",".join(UNDECIDED + ("bf16_mm",))
    proc = subprocess.run(
        [sys.executable, str(WORKER), "--arm", arm, "--ops", ops, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict:
    """{arm: [one record per repeat]}, each repeat's arms in arm_order(repeat)."""
    root = Path(RECORDS) if RECORDS else tmp_path_factory.mktemp("never-widen")
    got = {arm: [None] * REPEATS for arm in ARMS}
    for repeat in range(REPEATS):
        for arm in arm_order(repeat):
            got[arm][repeat] = _run(arm, repeat, root)
    return got


@pytest.mark.parametrize("op", UNDECIDED)
def test_an_undecided_op_builds_and_benchmarks_exactly_stocks_choices(records, op):
    """Catches: the op's templates generated in kselect's widened space, a choice added or
    pruned, a benchmark skipped or added, a wrong output, a compile that failed."""
    first = records["stock"][0]["ops"][op]
    for repeat in range(REPEATS):
        stock = records["stock"][repeat]["ops"][op]
        assert "error" not in stock, stock["error"]
        assert stock["built"] == first["built"] and stock["built"], "stock built no list, or another list"
        for arm in ARMS:
            row = records[arm][repeat]["ops"][op]
            assert "error" not in row, (arm, row["error"])
            assert row["built"] == stock["built"] == row["handed_on"], (arm, op)
            # what Inductor benchmarks leaves out a choice that failed to compile: the same
            # conditions (the repeat's stock process) give the same list
            assert row["benchmarked"] == stock["benchmarked"], (arm, op, repeat)
            assert {space for _, space in row["spaces"]} <= {"DEFAULT"}, (arm, row["spaces"])
            assert row["search_space"] == "DEFAULT"  # Inductor's own setting, after the compile
            limit = 0 if op == "int_mm" else 2e-2
            assert row["max_rel_error"] <= limit, (arm, row["max_rel_error"])


@pytest.mark.parametrize("op", UNDECIDED)
def test_an_undecided_op_compiles_no_slower_than_stock(records, op):
    """Median of the cold processes per arm. Catches: kselect's work on an op it leaves (a model
    loaded or warmed to ask whether it holds the op, a widened space) showing in its compile."""
    stock = statistics.median(r["ops"][op]["compile_s"] for r in records["stock"])
    for arm in ("verify", "predict"):
        mine = statistics.median(r["ops"][op]["compile_s"] for r in records[arm])
        assert mine <= COMPILE_RATIO * stock, (arm, op, mine, stock)


def test_the_bf16_mm_is_decided_over_the_widened_space(records):
    """The contrast in the same processes. Catches: the gate leaving a modelled bf16 mm to stock."""
    for arm in ("verify", "predict"):
        for record in records[arm]:
            row = record["ops"]["bf16_mm"]
            assert {space for _, space in row["spaces"]} == {"EXHAUSTIVE"}, row["spaces"]
            assert len(row["handed_on"][0]) < len(records["stock"][0]["ops"]["bf16_mm"]["built"][0])
            assert record["stats"]["decisions"] >= 1 and record["stats"]["fallbacks"] == 0, record["stats"]
