"""Which shipped model serves a card: this exact card's, else one of its architecture; a model
the user names serves any card, with one warning when it was made for another."""

import json
import logging
import warnings

import pytest

from kselect.selector.model.checks import DeviceMismatchError, architecture, device_match
from kselect.selector.model.cost_model import CostModel, meta_path
from kselect.selector.model.discovery import load_shipped, serve_named, shipped_models


def _shipped_fingerprints() -> dict[str, dict]:
    return {p.name: json.loads(meta_path(p).read_text())["fingerprint"] for p in shipped_models()}


def _another_sm90_card() -> dict:
    """A Hopper card no shipped model was trained on (a GH200: sm_90, 132 SMs)."""
    fp = dict(next(iter(_shipped_fingerprints().values())))
    fp.update(gpu_name="NVIDIA GH200 480GB", fingerprint_id="0123456789abcdef", compute_capability="9.0")
    return fp


def test_architecture_names_cuda_and_rocm_targets():
    assert architecture({"compute_capability": "9.0"}) == "sm_90"
    assert architecture({"hip_version": "6.4", "gcn_arch": "gfx942:sramecc+:xnack-"}) == "gfx942"
    assert architecture({"gpu_name": "x"}) is None


def test_each_shipped_model_serves_its_own_card_as_the_card():
    """Fails if discovery prefers an architecture match over the card's own model."""
    for name, fp in _shipped_fingerprints().items():
        model = load_shipped(fingerprint=fp)
        assert model.device_scope == "card"
        assert device_match(model.metadata_, fp) == "card"


def test_a_card_without_its_own_model_gets_one_of_its_architecture(caplog):
    """Fails if an sm_90 card without its own model is refused (the earlier behaviour), or if
    the info line does not name the model and the card it was made for."""
    fp = _another_sm90_card()
    caplog.set_level(logging.INFO, logger="kselect.selector.model.cost_model")
    model = load_shipped(fingerprint=fp)
    assert model.device_scope == "architecture"
    model.check_device(fp)  # serves this card
    lines = [r.getMessage() for r in caplog.records if "serving model" in r.getMessage()]
    assert len(lines) == 1 and "sm_90" in lines[0] and model.fingerprint["gpu_name"] in lines[0], lines


def test_another_architecture_is_refused():
    """Fails if architecture discovery matches any GPU: an sm_80 card gets no model."""
    fp = dict(_another_sm90_card(), gpu_name="NVIDIA A100-SXM4-80GB", sm_count=108, compute_capability="8.0")
    with pytest.raises(DeviceMismatchError, match="sm_80"):
        load_shipped(fingerprint=fp)


def test_a_card_scoped_model_still_refuses_another_card():
    """Fails if the architecture scope leaks: a model loaded for its own card refuses another."""
    name, fp = next(iter(_shipped_fingerprints().items()))
    model = load_shipped(name, fingerprint=fp)
    with pytest.raises(DeviceMismatchError):
        model.check_device(_another_sm90_card())


def test_a_named_model_of_another_card_serves_with_a_warning_text():
    """Fails if a model the user named is refused on another card, or accepted silently."""
    name, fp = next(iter(_shipped_fingerprints().items()))
    model = CostModel.load(meta_path(shipped_models()[0]).with_name(name))
    assert serve_named(model, fp, name) is None and model.device_scope == "card"
    other = dict(fp, gpu_name="NVIDIA A100-SXM4-80GB", sm_count=108, compute_capability="8.0")
    said = serve_named(model, other, name)
    assert said and fp["gpu_name"] in said and "A100" in said and "you named it" in said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.check_device(other)  # serves it now


def _cards_of(name: str) -> list[dict]:
    meta = json.loads(meta_path(next(p for p in shipped_models() if p.name == name)).read_text())
    return meta.get("fingerprints") or [meta["fingerprint"]]


def test_a_model_of_several_cards_serves_each_of_them_as_the_card_and_featurises_with_its_own():
    """Fails if discovery reads only a pooled model's first card (the H100 would be served an
    architecture match), or if the ranker featurises the H100's GEMMs with the H200's bandwidth."""
    h100 = next(fp for fp in _cards_of("hopper-bf16.json") if "H100" in fp["gpu_name"])
    model = load_shipped(fingerprint=h100)
    assert model.metadata_["booster_file"] == "hopper-bf16.json" and model.device_scope == "card"
    used = model.fingerprint_for(h100)
    assert used["gpu_name"] == h100["gpu_name"] and used["mem_bandwidth_gbs"] == h100["mem_bandwidth_gbs"]
    assert used["mem_bandwidth_gbs"] != model.fingerprint["mem_bandwidth_gbs"]  # the first card is the H200


def test_a_card_with_a_model_of_its_own_keeps_it_over_a_pooled_one():
    """Fails if a pooled model displaces the model made for this card alone (the H200 keeps h200-bf16)."""
    h200 = _shipped_fingerprints()["h200-bf16.json"]
    assert load_shipped(fingerprint=h200).metadata_["booster_file"] == "h200-bf16.json"


def test_an_unseen_card_of_the_architecture_gets_the_model_of_several_cards():
    """Fails if an sm_90 card with no model of its own is served a single other card's model
    while one trained on several Hopper cards ships."""
    model = load_shipped(fingerprint=_another_sm90_card())
    assert model.metadata_["booster_file"] == "hopper-bf16.json" and model.device_scope == "architecture"
