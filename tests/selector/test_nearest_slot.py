"""verify's nearest-shape slot: the lookup table, its place in the timed set, the artifact that
carries it, and the evaluation's simulation of the same rule."""

import json

import numpy as np
import pandas as pd
import pytest

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.selector.decide.nearest import NEIGHBOUR_STEP, NearestTableError, NearestTemplates
from kselect.selector.decide.policy import choose_kept

NT = "mm:bf16:nt"


def table():
    """Three shapes: 8x64x64 nt (A best, B 10 % off), 64x64x64 nt (C), 8x64x64 nn (D)."""
    return NearestTemplates.build(
        [(8, 64, 64, NT), (64, 64, 64, NT), (8, 64, 64, "mm:bf16:nn")],
        [[("A", 0.0), ("B", 0.10)], [("C", 0.0)], [("D", 0.0), ("A", 0.3)]],
    )


def test_preferences_score_by_gap_and_neighbour_distance():
    # neighbours of 8x64x64 nt: itself (0), 64x64x64 (+1 step), the nn shape (+2 steps)
    assert NEIGHBOUR_STEP < 0.10
    assert table().preferences(8, 64, 64, NT) == ["A", "C", "B", "D"]
    # from 64x64x64 the same-kind 64-row shape is nearest: C first
    assert table().preferences(64, 64, 64, NT)[0] == "C"
    assert NearestTemplates.build([], []).preferences(8, 8, 8, NT) == []


def test_json_round_trip_and_bad_tables():
    t = table()
    again = NearestTemplates.from_json(json.loads(json.dumps(t.to_json())))
    assert again.preferences(8, 64, 64, NT) == t.preferences(8, 64, 64, NT)
    good = t.to_json()
    with pytest.raises(NearestTableError, match="version"):
        NearestTemplates.from_json({**good, "format_version": 99})
    with pytest.raises(NearestTableError, match="outside"):
        NearestTemplates.from_json({**good, "templates": [[0, 7], [2], [3, 0]]})
    with pytest.raises(NearestTableError, match="differ in length"):
        NearestTemplates.from_json({**good, "gaps": [[0.0], [0.0], [0.0, 0.3]]})
    with pytest.raises(NearestTableError, match="not an object"):
        NearestTemplates.from_json([good])
    with pytest.raises(NearestTableError, match="format"):
        NearestTemplates.from_json({**good, "format": "other"})
    with pytest.raises(NearestTableError, match="malformed"):
        NearestTemplates.from_json({k: v for k, v in good.items() if k != "kinds"})


def tile(bm, bn, warps=4):
    return Candidate.make("triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=warps)


ATEN = Candidate.make("aten", "mm")
# 1 and 2 are one tile family (4 and 8 warps); 3..6 four other families
CANDS = [ATEN, tile(64, 64, 4), tile(64, 64, 8), tile(128, 64), tile(64, 128), tile(128, 128), tile(256, 64)]
SCORES = np.array([0.0, -0.10, -0.12, -0.05, 0.02, 0.2, 0.25])  # model: 2, 3, 4, 5, 6


def test_the_last_slot_goes_to_the_lookup_of_another_family():
    kept, why = choose_kept(CANDS, SCORES, "verify", 4, True, False, aten_gap=True, nearest=[1, 6])
    assert kept == [2, 3, 4, 6, 0]  # the model's three, the lookup's 6 (its 1 shares 2's family), ATen
    assert "nearest measured shape" in why and CANDS[6].key in why
    kept, why = choose_kept(CANDS, SCORES, "verify", 4, True, False, aten_gap=True, nearest=[1])
    assert kept == [2, 3, 4, 5, 0] and "nearest" not in why  # nothing new to add: the model's fourth
    assert choose_kept(CANDS, SCORES, "verify", 4, True, False, aten_gap=True)[0] == [2, 3, 4, 5, 0]
    # one template (the cap): the model's alone; none predicted within reach: ATen alone
    assert choose_kept(CANDS, SCORES, "verify", 1, True, False, aten_gap=True, nearest=[6])[0] == [2, 0]
    assert choose_kept(CANDS, SCORES + 0.5, "verify", 4, True, False, aten_gap=True, nearest=[6])[0] == [0]
    broken = SCORES.copy()
    broken[6] = np.nan  # a candidate that cannot run is never the lookup's
    assert choose_kept(CANDS, broken, "verify", 4, True, False, aten_gap=True, nearest=[6])[0] == [2, 3, 4, 5, 0]
    assert choose_kept(CANDS, SCORES, "predict", 4, True, False, aten_gap=True, nearest=[6])[0] == [0]


def test_the_table_ships_in_the_sidecar_and_serves(tmp_path):
    from kselect.selector.decide.gap_policy import nearest_candidates
    from kselect.selector.decide.rankers import CostModelRanker, RankerUnavailable
    from kselect.selector.model.cost_model import CostModel, meta_path
    from kselect.selector.model.features import FEATURE_NAMES

    rng = np.random.default_rng(0)
    model = CostModel(objective="reg:aten", n_estimators=2, max_depth=2).fit(
        rng.random((40, len(FEATURE_NAMES))), rng.random(40)
    )
    model.nearest_templates_ = NearestTemplates.build([(8, 64, 64, NT)], [[(CANDS[6].key, 0.0), (CANDS[3].key, 0.05)]])
    model.save(tmp_path / "m.json", {"fingerprint": {"gpu_name": "G", "sm_count": 2}})
    ranker = CostModelRanker(CostModel.load(tmp_path / "m.json"), None)
    problem = Problem(8, 64, 64)
    assert ranker.nearest_order(problem, CANDS) == [6, 3]
    assert nearest_candidates(ranker, "verify", problem, CANDS) == [6, 3]
    assert nearest_candidates(ranker, "predict", problem, CANDS) == []
    meta = json.loads(meta_path(tmp_path / "m.json").read_text())
    meta["nearest_templates"]["templates"] = [[5, 0]]
    meta_path(tmp_path / "m.json").write_text(json.dumps(meta))
    broken = CostModelRanker(CostModel.load(tmp_path / "m.json"), {"gpu_name": "G", "sm_count": 2})
    with pytest.raises(RankerUnavailable, match="outside"):
        broken.check()


def toy_shapes():
    from kselect.training.data.dataset import COLUMNS, conform
    from kselect.training.learn.ranking_metrics import ShapeSet

    tile_ = {"BLOCK_K": 32, "GROUP_M": 8, "num_stages": 3}

    def row(pk, M, ck, backend, t, bm=64, bn=64, warps=4):
        r = {c: None for c in COLUMNS}
        r.update(
            {
                "problem_key": pk,
                "op": "mm",
                "M": M,
                "N": 64,
                "K": 64,
                "batch": 1,
                "dtype": "bf16",
                "layout": "nt",
                "model": "f" + pk,
                "candidate_key": ck,
                "backend": backend,
                "template": "mm",
                "status": "ok",
                "time_ms": t,
                "oracle": False,
            }
        )
        if backend == "triton":
            r.update({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": warps, **tile_})
        return r

    # a: t1 / t2 one family, t3 and t4 two others; the lookup's t4 is the fastest after t1
    rows = [
        row("a", 8, "aten:mm", "aten", 1.0),
        row("a", 8, "t1", "triton", 0.5),
        row("a", 8, "t2", "triton", 0.6, warps=8),
        row("a", 8, "t3", "triton", 0.8, bn=128),
        row("a", 8, "t4", "triton", 0.55, bm=128),
    ]
    shapes = ShapeSet.from_frame(conform(pd.DataFrame(rows)), default_keys=lambda r: set())
    keys = list(shapes.rows["candidate_key"])
    model = np.array([{"aten:mm": 9, "t2": 0, "t1": 1, "t3": 2, "t4": 3}[k] for k in keys], dtype=float)
    near = np.array([{"t1": 0, "t4": 1}.get(k, np.inf) for k in keys], dtype=float)
    return shapes, model, near


def test_evaluation_simulates_the_selector_s_rule():
    from kselect.training.learn.headroom import verify_with_nearest

    shapes, model, near = toy_shapes()
    for n, want, timed in ((1, 0.6, 1), (2, 0.55, 2), (3, 0.55, 3), (4, 0.55, 3)):
        # n = 2: the model's t2, then the lookup's t1 shares its family -> t4; t1 (0.5) is never
        # timed: its family's first is t2; n = 4: three families are all there is
        t, k = verify_with_nearest(shapes, model, near, np.array([n]))
        assert t[0] == pytest.approx(want) and k[0] == timed, n
    t, _ = verify_with_nearest(shapes, model, np.full(len(model), np.inf), np.array([2]))
    assert t[0] == pytest.approx(0.6)  # no lookup row listed: the model's two (t2, t3)


def test_the_compile_price_passes_over_a_slow_lookup_pick():
    from kselect.selector.model.compile_price import CompilePrice

    price = CompilePrice(lambda idx: np.array([9000.0 if int(i) == 6 else 300.0 for i in idx]), 300.0, 1.5)
    kept, why = choose_kept(CANDS, SCORES, "verify", 4, True, False, aten_gap=True, compile_price=price, nearest=[6, 5])
    assert kept == [2, 3, 4, 5, 0] and price.passed == [6]
    assert f"nearest measured shape's ({CANDS[5].key})" in why and "passed over 1 slow" in why
