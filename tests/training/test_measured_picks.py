"""A card's measured picks (training/data/measured_picks.py): the fastest candidate per GEMM
where it beat ATen beyond noise, else ATen; written in kselect's form and Inductor's lookup-table
form; verify's bench decisions as picks (training/bench/verified_picks.py); and the shipped tables
(models/picks/) re-derived from the committed datasets and bench runs."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.training.data import measured_picks as mp
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.rows import row_for

from conftest import REPO

ATEN = Candidate.make("aten", "mm")
TILE = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
BIG = Candidate.make("triton", "mm", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8)


def _rows(problem, times: dict, spread: float = 0.005, **fields) -> list[dict]:
    """One ok row per candidate: {candidate: ms}; fields override every row's (status, noisy)."""
    return [
        row_for(
            problem,
            cand,
            time_ms=ms,
            time_min_ms=ms * (1 - spread),
            time_max_ms=ms * (1 + spread),
            spread=spread,
            fingerprint_id="fp",
            **fields,
        )
        for cand, ms in times.items()
    ]


def _frame(rows: list[dict]) -> pd.DataFrame:
    from kselect.training.data.dataset import conform

    return conform(pd.DataFrame(rows))


def test_a_template_is_picked_only_beyond_the_gain_and_the_spreads():
    clear = Problem(256, 4096, 4096)  # the tile 10 % faster, spreads 0.5 %: the tile
    close = Problem(512, 4096, 4096)  # 2 % faster: inside MIN_GAIN, ATen
    spread = Problem(1024, 4096, 4096)  # 5 % faster, but spreads of 3 % each: ATen
    no_aten = Problem(2048, 4096, 4096)  # no reference: left out
    rows = (
        _rows(clear, {ATEN: 1.10, TILE: 1.0, BIG: 1.05})
        + _rows(close, {ATEN: 1.02, TILE: 1.0})
        + _rows(spread, {ATEN: 1.05, TILE: 1.0}, spread=0.03)
        + _rows(no_aten, {TILE: 1.0})
    )
    picks = {p.problem_key: p for p in mp.best_of_space(_frame(rows), source="d")}
    assert set(picks) == {clear.key, close.key, spread.key}
    assert picks[clear.key].pick == TILE.key and math.isclose(picks[clear.key].gain, 0.10)
    assert picks[clear.key].aten == ATEN.key and picks[clear.key].aten_ms == 1.10
    for key in (close.key, spread.key):
        assert picks[key].pick == ATEN.key and picks[key].gain == 0.0, picks[key]
    # the gain threshold is the caller's
    loose = {p.problem_key: p.pick for p in mp.best_of_space(_frame(rows), min_gain=0.01)}
    assert loose[close.key] == TILE.key


def test_failed_and_noisy_rows_are_never_picked():
    problem = Problem(128, 4096, 4096)
    rows = (
        _rows(problem, {ATEN: 1.0})
        + _rows(problem, {TILE: 0.5}, noisy=True)
        + [dict(r, status="wrong_result") for r in _rows(problem, {BIG: 0.4})]
    )
    (pick,) = mp.best_of_space(_frame(rows))
    assert pick.pick == ATEN.key


def test_tables_are_written_in_both_forms(tmp_path):
    from kselect.selector.compat import lookup_table as inductor_lookup_table

    if inductor_lookup_table.lookup_table_missing():
        pytest.skip(inductor_lookup_table.lookup_table_missing())
    bf16, tf32 = Problem(256, 4096, 4096), Problem(256, 4096, 4096, "tf32")
    ds = DatasetDir(tmp_path / "data")
    ds.append(_rows(bf16, {ATEN: 1.2, TILE: 1.0}) + _rows(tf32, {ATEN: 1.2, TILE: 1.0}), tag="t")
    ds.write_fingerprint({"fingerprint_id": "fp", "gpu_name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"})
    summary = mp.write_tables([tmp_path / "data"], tmp_path / "out" / "card")
    ours = json.loads((tmp_path / "out" / "card.json").read_text())
    assert ours["format"] == mp.FORMAT and ours["card"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert ours["picks"][bf16.key]["pick"] == TILE.key and ours["picks"][tf32.key]["pick"] == TILE.key
    theirs = json.loads((tmp_path / "out" / "card.lookup.json").read_text())
    (configs,) = theirs.values()  # the TF32 pick cannot be told from fp32 in Inductor's key: left out
    assert configs == [{"template_id": "triton::mm", "EVEN_K": True, **{k: v for k, v in TILE.kwargs.items()}}], configs
    assert summary["template_picks"] == 2 and summary["inductor"]["skipped"]


def test_two_cards_are_not_merged():
    with pytest.raises(ValueError, match="different cards"):
        mp.merge([({"gpu_name": "A"}, []), ({"gpu_name": "B"}, [])])


def _bench_rows(problem: str, plain: list[float], verify: list[float], chosen: list[str], correct=True) -> list[dict]:
    """bench gemm rows of one GEMM: one per process and variant."""
    rows = [{"variant": "plain", "problem": problem, "kernel_ms": ms, "correct": True, "chosen": ""} for ms in plain]
    return rows + [
        {"variant": "kselect-verify", "problem": problem, "kernel_ms": ms, "correct": correct, "chosen": c}
        for ms, c in zip(verify, chosen)
    ]


def test_verify_s_bench_decisions_become_picks_only_beyond_noise_and_the_gain():
    from kselect.training.bench.verified_picks import bench_picks

    tile = TILE.key
    rows = (
        _bench_rows("mm:8x3072x3072:bf16:nt", [10.0, 10.1, 10.05], [8.0, 8.1, 8.05], [tile] * 3)  # 20 % faster
        + _bench_rows("mm:8x4096x4096:bf16:nt", [10.0, 10.1, 10.05], [9.9, 9.95, 9.9], [tile] * 3)  # 1 %: noise
        + _bench_rows("mm:8x5120x5120:bf16:nt", [10.0, 10.1, 10.05], [10.0, 10.0, 10.1], ["aten:mm"] * 3)
        + _bench_rows("mm:8x6144x6144:bf16:nt", [10.0, 10.1, 10.05], [8.0, 8.1, 8.05], [tile, tile, "aten:mm"])
        + _bench_rows("mm:8x7168x7168:bf16:nt", [10.0, 10.1, 10.05], [8.0, 8.1, 8.05], [tile] * 3, correct=False)
        + _bench_rows("mm:8x9216x9216:bf16:nt", [10.0, 13.0, 11.0], [9.0, 9.1, 9.0], [tile] * 3)  # noise 1.3
    )
    picks = {p.problem_key: p for p in bench_picks(rows, source="run")}
    # the undecided GEMM (verify's choice varied) and the wrong one are left out
    assert sorted(picks) == [
        "mm:8x3072x3072:bf16:nt",
        "mm:8x4096x4096:bf16:nt",
        "mm:8x5120x5120:bf16:nt",
        "mm:8x9216x9216:bf16:nt",
    ]
    won = picks["mm:8x3072x3072:bf16:nt"]
    assert won.pick == tile and won.aten == "aten:mm" and won.source == "run"
    assert math.isclose(won.pick_ms, 8.05) and math.isclose(won.aten_ms, 10.05)
    assert math.isclose(won.gain, 10.05 / 8.05 - 1)
    for key in ("mm:8x4096x4096:bf16:nt", "mm:8x5120x5120:bf16:nt", "mm:8x9216x9216:bf16:nt"):
        assert picks[key].pick == picks[key].aten == "aten:mm" and picks[key].gain == 0.0, key


def test_bench_picks_join_only_their_own_card_and_never_over_a_dataset():
    held = mp.MeasuredPick(Problem(8, 3072, 3072), "aten:mm", 1.0, "aten:mm", 1.0, 0.0, "data")
    new = mp.MeasuredPick(Problem(8, 4096, 4096), TILE.key, 0.8, "aten:mm", 1.0, 0.25, "run")
    again = mp.MeasuredPick(Problem(8, 3072, 3072), TILE.key, 0.8, "aten:mm", 1.0, 0.25, "run")
    merged = mp.with_bench({"gpu_name": "NVIDIA H100"}, [held], ("NVIDIA H100", [again, new]))
    assert merged == [held, new]
    with pytest.raises(ValueError, match="bench runs measured on 'NVIDIA H200'"):
        mp.with_bench({"gpu_name": "NVIDIA H100"}, [held], ("NVIDIA H200", [new]))


@pytest.mark.parametrize(
    "stem, data, bench",
    [
        ("h200", ["data/h200-bf16"], ["reports/2026-12-04-bench-gemm-h200-pooled"]),
        (
            "h100",
            ["data/h100-bf16-retrain/data", "data/h100-dtypes/data"],
            ["reports/2026-12-06-unseen-verify-one-machine-h100/run"],
        ),
    ],
)
def test_the_shipped_tables_are_the_committed_datasets_picks(stem, data, bench):
    """models/picks/<card>.json is what `kselect export-measured-picks` writes from the committed
    datasets and bench runs: a dataset, run or rule change without a re-export fails here."""
    from kselect.training.bench.verified_picks import run_picks

    card, picks = mp.merge([mp.dataset_picks(REPO / d) for d in data])
    picks = mp.with_bench(card, picks, run_picks([REPO / b for b in bench]))
    want = mp.table_document(card, picks)
    shipped = json.loads((REPO / "models" / "picks" / f"{stem}.json").read_text())
    want["sources"] = shipped["sources"]  # the paths the command was given, relative or not
    for entry in want["picks"].values():
        entry["source"] = None
    for entry in shipped["picks"].values():
        entry["source"] = None
    assert shipped == json.loads(json.dumps(want)), (
        f"re-export: kselect export-measured-picks --out models/picks/{stem}"
    )
