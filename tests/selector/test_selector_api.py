"""enable() / selecting() as a user calls them: every keyword checked before the active selector
is touched, the outer configuration back after any exit, `~` and environment variables in paths.
No compile: what is checked is what Inductor would run with (its choices handler and its GEMM
search space)."""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")

from torch._inductor import config as inductor_config  # noqa: E402

from kselect.selector import config as options  # noqa: E402
from kselect.selector.compat import inductor_settings, torch_release  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402


@pytest.fixture
def outer():
    """predict enabled over the user's DEFAULT space (kselect ranks EXHAUSTIVE inside its decisions)."""
    with inductor_config.patch(max_autotune_gemm_search_space="DEFAULT"):
        sel = ksi.enable("predict", ranker=MeasuredRanker({}), k=3)
        try:
            yield sel
        finally:
            ksi.disable()
        assert inductor_config.max_autotune_gemm_search_space == "DEFAULT"


def _active_unchanged(sel):
    assert ksi.current() is sel
    assert inductor_settings.current_choices().kselect_selector is sel
    # Inductor's own setting is the user's; kselect's EXHAUSTIVE is in force inside its decisions alone
    assert inductor_config.max_autotune_gemm_search_space == "DEFAULT" and ksi._state.search_space == "EXHAUSTIVE"


BAD = [
    ({"k": 0}, "k"),
    ({"k": 2.7}, "k"),
    ({"k": "3"}, "k"),
    ({"k": True}, "k"),
    ({"k": None}, "k"),
    ({"min_k": 3, "k": 2}, "min_k"),
    ({"min_k": 1.0}, "min_k"),
    ({"search_space": "BOGUS"}, "search_space"),
    ({"search_space": 1}, "search_space"),
    ({"verify_timing": "fastest"}, "verify_timing"),
    ({"compile_in": "gpu"}, "compile_in"),
    ({"aten_margin": math.nan}, "aten_margin"),
    ({"aten_margin": "1"}, "aten_margin"),
    ({"aten_margin": -0.5}, "aten_margin"),
    ({"compile_budget": math.inf}, "compile_budget"),
    ({"keep_aten": "no"}, "keep_aten"),
    ({"adaptive_k": 0}, "adaptive_k"),
    ({"warm_start": None}, "warm_start"),
    ({"cache_dir": 3}, "cache_dir"),
    ({"model": 1.5}, "model"),
    ({"ranker": object()}, "ranker"),
    ({"mode": "fast"}, "mode"),
    ({"mode": None}, "mode"),
]


@pytest.mark.parametrize("kwargs, name", BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_enable_refuses_a_bad_keyword_and_changes_nothing(outer, kwargs, name):
    kwargs = {"mode": "verify", **kwargs}
    with pytest.raises(ValueError, match=name):
        ksi.enable(**kwargs)
    _active_unchanged(outer)
    # the same check, in the one place it lives
    with pytest.raises(options.SettingError, match=name):
        options.check_settings(**kwargs)


def _shipped_pair(folder, name: str = "m"):
    """A copy of the shipped H200 model as `folder/name.json` + its sidecar; returns both paths."""
    import shutil

    from kselect.models import shipped_model_path
    from kselect.selector.model.artifact import sidecar_path

    model = shipped_model_path("h200-bf16.json")
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{name}.json"
    shutil.copy(model, copy)
    shutil.copy(sidecar_path(model), sidecar_path(copy))
    return copy, sidecar_path(copy)


def _unreadable_sidecar(pair):
    pair[1].write_bytes(b"\xff\xfe not UTF-8")


def _sidecar_not_json(pair):
    pair[1].write_text('{"kind": "cost-model", ')


def _sidecar_of_another_kind(pair):
    pair[1].write_text(pair[1].read_text().replace('"kind": "cost-model"', '"kind": "compile-cost"'))


def _no_sidecar(pair):
    pair[1].unlink()


def _no_model_file(pair):
    pair[0].unlink()


def _truncated_booster(pair):
    pair[0].write_text('{"learner": {"truncated')


BAD_MODELS = [
    (_unreadable_sidecar, 1, "cannot read model sidecar"),
    (_sidecar_not_json, 1, "not valid JSON"),
    (_sidecar_of_another_kind, 1, "not a cost-model sidecar"),
    (_no_sidecar, 1, "has no sidecar"),
    (_no_model_file, 0, "does not exist"),
    (_truncated_booster, 0, "cannot read XGBoost model"),
]


@pytest.mark.parametrize("spoil, named, problem", BAD_MODELS, ids=[b[0].__name__.strip("_") for b in BAD_MODELS])
def test_enable_refuses_a_named_model_it_cannot_read_and_keeps_the_active_selector(
    outer, tmp_path, spoil, named, problem
):
    """A model file the user names is read when named: enable() (and selecting()) raise a
    ModelError naming the file and its problem, and the selector that was active stays.

    Fails on the mutation: enable() without `sel.load_named_model()` (selector/inductor/lifecycle.py),
    which accepted such a model and refused it only at the first GEMM, with a fallback warning."""
    from kselect.selector.model.cost_model import ModelError

    pair = _shipped_pair(tmp_path)
    spoil(pair)
    with pytest.raises(ModelError, match=problem) as e:
        ksi.enable("verify", model=str(pair[0]))
    assert str(pair[named]) in str(e.value) or pair[named].name in str(e.value), e.value
    _active_unchanged(outer)
    with pytest.raises(ModelError, match=problem):
        with ksi.selecting("predict", model=str(pair[0])):
            pytest.fail("the block must not run")
    _active_unchanged(outer)


def test_enable_reads_a_named_model_once(tmp_path):
    """A good named model is read by enable() and ranks from that one read: with both files gone
    from disk after enable(), its GPU still gets a ranker."""
    import json

    from kselect.selector.decide.rankers import CostModelRanker

    pair = _shipped_pair(tmp_path)
    fingerprint = json.loads(pair[1].read_text())["fingerprint"]
    try:
        sel = ksi.enable("predict", model=str(pair[0]))
        pair[0].unlink(), pair[1].unlink()  # nothing reads them again
        assert isinstance(sel.ranker_for(fingerprint), CostModelRanker)
    finally:
        ksi.disable()


def test_autoload_with_a_bad_model_warns_and_leaves_stock(tmp_path, monkeypatch):
    """KSELECT_MODE with a KSELECT_MODEL that cannot be read: the entry point `import torch`
    calls warns once, naming the file, and installs nothing -- it never raises."""
    from kselect.selector import autoload

    pair = _shipped_pair(tmp_path)
    _unreadable_sidecar(pair)
    monkeypatch.setattr(autoload, "_loaded", False)
    monkeypatch.setenv("KSELECT_MODE", "predict")
    monkeypatch.setenv("KSELECT_MODEL", str(pair[0]))
    before = inductor_settings.current_choices()
    with pytest.warns(UserWarning, match="stock Inductor") as caught:
        autoload.load()
    assert len(caught) == 1 and pair[1].name in str(caught[0].message), [str(w.message) for w in caught]
    assert ksi.current() is None and inductor_settings.current_choices() is before


def test_selecting_with_bad_arguments_keeps_the_outer_selector(outer):
    with pytest.raises(ValueError, match="k must be"):
        with ksi.selecting("verify", k=0):
            pytest.fail("the block must not run")
    _active_unchanged(outer)


def test_selecting_restores_the_outer_configuration_on_any_exit(outer):
    with ksi.selecting("verify", k=1, ranker=MeasuredRanker({}), search_space=None) as inner:
        assert ksi.current() is inner and ksi._state.search_space is None  # inner ranks the user's space
        assert inductor_config.max_autotune_gemm_search_space == "DEFAULT"
    _active_unchanged(outer)
    with pytest.raises(RuntimeError, match="inside"):
        with ksi.selecting("verify", k=2, ranker=MeasuredRanker({})):
            raise RuntimeError("a compile failed inside")
    _active_unchanged(outer)
    with ksi.selecting("off"):
        assert ksi.current() is None and inductor_config.max_autotune_gemm_search_space == "DEFAULT"
    _active_unchanged(outer)
    assert outer.k == 3 and outer.mode == "predict"


def test_selecting_without_an_outer_selector_leaves_none():
    before = inductor_settings.current_choices()
    with ksi.selecting("predict", ranker=MeasuredRanker({})):
        assert ksi.current() is not None
    assert ksi.current() is None and inductor_settings.current_choices() is before


def test_paths_expand_home_and_environment_variables(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir(), cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KS_TEST_ROOT", str(tmp_path / "env"))
    monkeypatch.chdir(cwd)
    sel = ksi.Selector("predict", cache_dir="~/.cache/kselect", model="$KS_TEST_ROOT/model.json")
    assert sel.cache.root == home / ".cache" / "kselect"
    assert sel.model == str(tmp_path / "env" / "model.json")
    sel.cache.put("ab12", ["aten:mm"])
    assert (home / ".cache" / "kselect" / "ab" / "ab12.json").is_file() and not (cwd / "~").exists()
    _shipped_pair(home)  # enable() reads the model it names: ~/m.json is there
    try:
        env = ksi.enable_from_env(
            {"KSELECT_MODE": "predict", "KSELECT_CACHE_DIR": "${KS_TEST_ROOT}/cache", "KSELECT_MODEL": "~/m.json"}
        )
        assert env.cache.root == tmp_path / "env" / "cache" and env.model == str(home / "m.json")
    finally:
        ksi.disable()
    # a settings round trip keeps the expanded paths
    assert ksi.Selector(**sel.settings()).settings() == sel.settings()


def test_check_settings_normalises_and_names_unknown_keywords():
    out = options.check_settings(k=2, min_k=2, aten_margin=1, search_space="exhaustive", cache_dir=None, keep_aten=True)
    assert out == {
        "k": 2,
        "min_k": 2,
        "aten_margin": 1.0,
        "search_space": "EXHAUSTIVE",
        "cache_dir": None,
        "keep_aten": True,
    }
    assert type(out["aten_margin"]) is float
    with pytest.raises(options.SettingError, match="kk"):
        options.check_settings(kk=2)
    assert options.expand_path("~") == os.path.expanduser("~")


@pytest.mark.parametrize("version", ["2.10.0", "2.14.0", "3.0.0a0+git1234"])
def test_enable_outside_the_supported_torch_range_warns_once_and_keeps_stock(monkeypatch, version):
    from kselect.selector.warn import KselectFallbackWarning

    monkeypatch.setattr(torch, "__version__", version)
    with inductor_config.patch(max_autotune_gemm_search_space="DEFAULT"):
        with pytest.warns(KselectFallbackWarning, match="supported range 2.11-2.13") as caught:
            assert ksi.enable("predict", ranker=MeasuredRanker({})) is None
        assert len([w for w in caught if issubclass(w.category, KselectFallbackWarning)]) == 1
        # nothing installed: Inductor keeps its own handler and the user's search space
        assert ksi.current() is None
        assert getattr(inductor_settings.current_choices(), "kselect_selector", None) is None
        assert inductor_config.max_autotune_gemm_search_space == "DEFAULT"


@pytest.mark.parametrize("version", ["2.11.0+cu130", "2.13.0+cpu"])
def test_the_supported_torch_releases_are_inside_the_range(version):
    assert torch_release.torch_support_problem(version) is None


def test_the_supported_range_is_the_one_pyproject_pins():
    """torch_release.SUPPORTED_TORCH and pyproject's torch requirement name the same releases."""
    from pathlib import Path

    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("torch"))
    (low_major, low_minor), (high_major, high_minor) = torch_release.SUPPORTED_TORCH
    assert pin.replace(" ", "") == f"torch>={low_major}.{low_minor},<{high_major}.{high_minor + 1}"
