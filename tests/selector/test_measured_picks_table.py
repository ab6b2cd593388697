"""The selector's reading of a card's measured picks (selector/model/measured_picks.py): this
card's tables only, a broken table serving nothing with one warning, and the shipped tables
found for the cards they were measured on."""

from __future__ import annotations

import json
import warnings

from kselect.selector.model import measured_picks as picks
from kselect.selector.warn import reset_warnings

H100 = {"gpu_name": "NVIDIA H100 80GB HBM3", "sm_count": 132}
H200 = {"gpu_name": "NVIDIA H200", "sm_count": 132}


def _table(path, card, entries):
    doc = {"format": picks.FORMAT, "card": card, "picks": {k: {"pick": v} for k, v in entries.items()}}
    path.write_text(json.dumps(doc))


def test_only_this_cards_tables_serve(tmp_path):
    _table(tmp_path / "a.json", H100, {"mm:8x4096x4096:bf16:nt": "triton:mm:BK64-BM16-BN64-G8-S4-W4"})
    _table(tmp_path / "b.json", H200, {"mm:8x4096x4096:bf16:nt": "aten:mm"})
    (tmp_path / "a.lookup.json").write_text(json.dumps({"some+key": [{"template_id": "aten::mm"}]}))
    assert picks.card_picks(H100, tmp_path) == {"mm:8x4096x4096:bf16:nt": "triton:mm:BK64-BM16-BN64-G8-S4-W4"}
    assert picks.card_picks(H200, tmp_path) == {"mm:8x4096x4096:bf16:nt": "aten:mm"}
    assert picks.card_picks({"gpu_name": "NVIDIA H100 80GB HBM3", "sm_count": 114}, tmp_path) == {}
    assert picks.card_picks(H100, tmp_path / "absent") == {}


def test_a_broken_table_serves_nothing_with_one_warning(tmp_path):
    reset_warnings()
    (tmp_path / "bad.json").write_text("{not json")
    _table(tmp_path / "other.json", H100, {"mm:1x2x3:bf16:nt": "aten:mm"})
    (tmp_path / "old.json").write_text(json.dumps({"format": "something-else", "picks": {}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = picks.card_picks(H100, tmp_path)
        picks.card_picks(H100, tmp_path)
    assert got == {"mm:1x2x3:bf16:nt": "aten:mm"}
    named = [str(w.message) for w in caught]
    assert len(named) == 2 and any("bad.json" in m for m in named) and any("old.json" in m for m in named), named


def test_the_shipped_tables_serve_their_cards():
    for card in (H100, H200):
        got = picks.card_picks(card)
        assert len(got) > 100 and any(v.startswith("triton:") for v in got.values()), (card, len(got))


# -- predict with the card's measured picks (decide/decider.py) -------------------------------
H200_ROW = "mm:1x128256x4096:bf16:nt"  # in data/h200-bf16; its measured pick is a template


def _h200():
    from kselect.models import shipped_model_path

    fingerprint = json.loads(shipped_model_path("h200-bf16.meta.json").read_text())["fingerprint"]
    return {**fingerprint, "device_type": "cuda"}


def _candidates(pick: str, with_pick: bool = True):
    from kselect.training.data.lookup_table import candidate_of_key

    other = "triton:mm:BK64-BM16-BN64-G8-S4-W4"
    keys = ["aten:mm", other] + ([pick] if with_pick else [])
    return [candidate_of_key(k) for k in keys]


def test_predict_serves_the_measured_pick_with_no_ranking(tmp_path):
    from kselect.kernels.problem import Problem
    from kselect.selector.inductor.hook import Selector

    fingerprint, problem = _h200(), Problem(1, 128256, 4096)
    pick = picks.card_picks(fingerprint)[H200_ROW]
    assert pick.startswith("triton:"), pick
    cands = _candidates(pick)
    sel = Selector("predict", cache_dir=str(tmp_path / "cache"))
    kept, entry = sel.select("templates", problem, {}, fingerprint, cands)
    assert [cands[i].key for i in kept] == [pick] and "models/picks" in sel.decisions[-1]["why"]
    assert entry[1]["measured_picks"] == picks.table_digest(picks.card_picks(fingerprint))  # keyed on the table
    for off in (
        dict(mode="predict", measured_picks=False),  # the setting off
        dict(mode="verify"),  # verify measures for itself
    ):
        other = Selector(**off)
        other.select("templates", problem, {}, fingerprint, cands)
        assert "models/picks" not in other.decisions[-1]["why"], off
    bare = Selector("predict")
    bare.select("templates", problem, {}, fingerprint, cands, epilogue=True)  # measured bare: not with an epilogue
    assert "models/picks" not in bare.decisions[-1]["why"]
    bare.select("templates", problem, {}, fingerprint, _candidates(pick, with_pick=False))  # not a choice here
    assert "models/picks" not in bare.decisions[-1]["why"]


def test_a_given_ranker_or_model_ranks_every_gemm():
    from kselect.selector.config import SelectorSettings
    from kselect.selector.inductor.device_rankers import DeviceRankers

    fingerprint = _h200()
    assert DeviceRankers(SelectorSettings.from_keywords(mode="predict")).measured_picks(fingerprint)[1]
    given = DeviceRankers(SelectorSettings.from_keywords(mode="predict", model="models/h200-bf16.json"))
    assert given.measured_picks(fingerprint) == ("", {})
