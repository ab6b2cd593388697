"""What is derived from config.SelectorSettings: the environment table, enable()'s keywords,
Selector.settings(), and which settings enter the decision-cache key."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector import config  # noqa: E402
from kselect.selector.decide import policy  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.model import compile_price  # noqa: E402

FIELDS = {f.name: f for f in dataclasses.fields(config.SelectorSettings)}


def _env_text(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def test_every_environment_option_is_a_field_described_and_read_back():
    names = [o.name for o in config.OPTIONS]
    assert len(set(names)) == len(names) and all(n.startswith("KSELECT_") for n in names)
    text = config.describe()
    for o in config.OPTIONS:
        assert o.field in FIELDS and f"{o.name} (" in text and o.help in text
        value = config.DEFAULTS.keywords()[o.field] if o.field != "mode" else "predict"
        if value is not None:  # each variable sets its own field, parsed to the keyword's type
            got = config.read({o.name: _env_text(value)})[o.field]
            assert got == value and type(got) is type(value), o.name
    # the variables unset: the environment's defaults, the selector off
    assert config.read({}) == {o.field: o.default for o in config.OPTIONS} and config.read({})["mode"] == "off"
    assert {"keep_aten", "ranker", "search_space"} == set(FIELDS) - {o.field for o in config.OPTIONS}


def test_enable_takes_exactly_the_fields_with_their_defaults():
    params = inspect.signature(ksi.enable).parameters
    assert list(params) == list(FIELDS)
    assert {n: p.default for n, p in params.items()} == config.DEFAULTS.keywords()
    for name in FIELDS:
        assert f"    {name} (" in ksi.enable.__doc__
    with pytest.raises(TypeError, match="kk"):  # as Python's own unexpected keyword
        ksi.enable("verify", kk=1)
    with pytest.raises(config.SettingError, match="kk"):
        ksi.Selector("verify", kk=1)


def test_selector_settings_make_it_again_and_read_as_attributes():
    ranker = MeasuredRanker({})
    sel = ksi.Selector("predict", k=2, min_k=2, ranker=ranker, search_space="default", compile_budget=0)
    got = sel.settings()
    assert list(got) == list(FIELDS) and got["ranker"] is ranker  # the object itself, not a copy
    assert got["search_space"] == "DEFAULT" and type(got["compile_budget"]) is float
    again = ksi.Selector(**got)
    assert again.config == sel.config and again.settings() == got
    assert (sel.k, sel.min_k, sel.mode, sel.ranker) == (2, 2, "predict", ranker)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.config.k = 3
    with pytest.raises(AttributeError):  # a setting changes only by making a new selector
        sel.k = 3
    with pytest.raises(AttributeError, match="no_such_setting"):
        sel.no_such_setting


def test_policy_defaults_are_the_settings_defaults():
    assert policy.ATEN_MARGIN_SD == config.DEFAULTS.aten_margin
    assert compile_price.COMPILE_BUDGET == config.DEFAULTS.compile_budget


PROBLEM = Problem(256, 256, 256, "fp32", "nn")
CANDIDATES = [Candidate.make("aten", "mm")] + [
    Candidate.make("triton", "mm", BLOCK_M=b, BLOCK_N=64, BLOCK_K=32, num_stages=2, num_warps=4) for b in (16, 32, 64)
]
RANKER = MeasuredRanker({PROBLEM.key: {c.key: 1.0 + i for i, c in enumerate(CANDIDATES)}})
CPU = {"fingerprint_id": "cpu-test", "device_type": "cpu"}


def _key(tmp_path, **settings) -> str:
    sel = ksi.Selector(**{**settings, "ranker": RANKER, "cache_dir": tmp_path})
    _, (key, _, _) = sel.select("templates", PROBLEM, {}, CPU, CANDIDATES)
    return key


@pytest.mark.parametrize("mode", ["verify", "predict"])
def test_decision_cache_key_changes_with_the_settings_that_decide_and_no_other(tmp_path, mode):
    other = {
        "k": 2,
        "keep_aten": False,
        "epilogue_fusion": True,
        "time_fused": True,
        "adaptive_k": False,
        "min_k": 2,
        "aten_margin": 0.5,
        "compile_budget": 0.0,
        "verify_timing": "inductor",
        "early_decision": False,
        "release_memory": False,
        "warm_while_compiling": False,
        "compile_in": "workers",
        "warm_start": False,
        "measured_picks": False,
        "search_space": "DEFAULT",
    }
    assert set(other) | {"mode", "ranker", "model", "cache_dir"} == set(FIELDS)  # every setting tried
    first = _key(tmp_path, mode=mode)
    assert _key(tmp_path, mode=mode) == first
    for name, value in other.items():
        decides = mode in FIELDS[name].metadata.get("decides", ())
        changed = _key(tmp_path, mode=mode, **{name: value})
        assert (changed != first) == decides, (mode, name)
    assert (ksi.Selector(mode, aten_margin=0.5).uuid() != ksi.Selector(mode).uuid()) == (mode == "predict")


def test_decision_cache_key_holds_the_rankers_identity_not_its_class(tmp_path):
    """A ranker with other knowledge never reuses another's cached decision: two MeasuredRankers
    (one class) that disagree each decide for themselves, the same table again hits, and a
    retrained model (the shipped one with a later `trained_at` in its sidecar) misses the first
    model's decision.

    Fails on the mutation: the key's "ranker" field as `type(ranker).__name__` instead of the
    ranker's `ident` (selector/decide/decider.py, the key built around `_decision_fields`)."""
    from kselect.models import shipped_model_path
    from kselect.selector.model.cost_model import CostModel

    reverse = MeasuredRanker({PROBLEM.key: {c.key: 10.0 - i for i, c in enumerate(CANDIDATES)}})

    def decide(root, problem, fingerprint, cands, **source):
        sel = ksi.Selector("predict", cache_dir=root, **source)
        kept, _ = sel.select("templates", problem, {}, fingerprint, cands)
        sel.cache.flush()
        return [cands[i].key for i in kept], sel.stats["cache_hits"]

    assert decide(tmp_path / "t", PROBLEM, CPU, CANDIDATES, ranker=RANKER) == (["aten:mm"], 0)
    assert decide(tmp_path / "t", PROBLEM, CPU, CANDIDATES, ranker=reverse) == ([CANDIDATES[-1].key], 0)
    assert decide(tmp_path / "t", PROBLEM, CPU, CANDIDATES, ranker=MeasuredRanker(RANKER.table))[1] == 1

    path = shipped_model_path("h200-bf16.json")
    model, retrained = CostModel.load(path), CostModel.load(path)
    retrained.metadata_ = {**model.metadata_, "trained_at": "2026-12-07T00:00:00Z"}
    bf16 = Problem(333, 7168, 5120, "bf16", "nt")
    cands = [Candidate.make("aten", "mm")] + [
        Candidate.make("triton", "mm", BLOCK_M=b, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
        for b in (16, 64, 128)
    ]
    assert decide(tmp_path / "m", bf16, model.fingerprint, cands, model=model)[1] == 0
    assert decide(tmp_path / "m", bf16, model.fingerprint, cands, model=model)[1] == 1  # the same model hits
    assert decide(tmp_path / "m", bf16, model.fingerprint, cands, model=retrained)[1] == 0
