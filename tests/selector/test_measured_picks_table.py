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
