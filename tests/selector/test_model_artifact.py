"""selector/model/artifact.py: the one sidecar schema, file pairing, checks and discovery that
the cost model, the compile-cost model and the AMD winner model share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kselect.models import MODELS_DIR
from kselect.selector.model import artifact
from kselect.selector.model.artifact import ModelError


def test_paths_pair_a_model_with_its_sidecar_from_any_name():
    for name in ("m/x", "m/x.json", "m/x.meta.json"):
        assert artifact.paths(name) == (Path("m/x.json"), Path("m/x.meta.json"))
    assert artifact.paths("m/x.ubj") == (Path("m/x.ubj"), Path("m/x.meta.json"))
    assert artifact.sidecar_path("m/h200-bf16.json") == Path("m/h200-bf16.meta.json")


def test_every_shipped_model_declares_one_known_kind():
    kinds = {}
    for p in sorted(MODELS_DIR.glob("*.meta.json")):
        kind, version = artifact.kind_of(artifact.read_sidecar(p))
        assert artifact.KINDS.get(kind) == version, p
        kinds.setdefault(kind, []).append(artifact.paths(p)[0])
    # every kind ships a model but the grouped one, which waits for its GPU data (docs/grouped-mm.md)
    assert set(kinds) | {"grouped-cost-model"} == set(artifact.KINDS)
    for kind, files in kinds.items():
        assert artifact.discover(kind) == files
    assert artifact.discover("compile-cost", where=lambda meta: meta.get("arch") == "sm_90") == kinds["compile-cost"]
    assert artifact.discover("compile-cost", where=lambda meta: meta.get("arch") == "sm_75") == []


def _pair(tmp_path, meta, name="m") -> Path:
    model = tmp_path / f"{name}.json"
    model.write_text("{}")
    artifact.sidecar_path(model).write_text(json.dumps(meta))
    return model


GOOD = artifact.header("compile-cost", ["a", "b"], command="kselect compile-cost fit", trained_at=None)


def test_a_good_sidecar_loads_and_each_bad_one_names_file_and_problem(tmp_path):
    assert GOOD == {
        "kind": "compile-cost",
        "schema_version": 1,
        "feature_names": ["a", "b"],
        "command": "kselect compile-cost fit",
    }
    model = _pair(tmp_path, GOOD)
    assert artifact.load_sidecar(model, "compile-cost", ["a", "b"]) == (model, GOOD)
    assert artifact.load_sidecar(tmp_path / "m", "compile-cost")[0] == model  # the stem names it too
    for meta, kind, features, problem in (
        (GOOD, "cost-model", None, "not a cost-model sidecar"),
        ({**GOOD, "schema_version": 2}, "compile-cost", None, "schema version 2"),
        ({k: v for k, v in GOOD.items() if k != "feature_names"}, "compile-cost", None, "lacks"),
        (GOOD, "compile-cost", ["b", "a"], "other features"),
    ):
        _pair(tmp_path, meta)
        with pytest.raises(ModelError, match=problem) as err:
            artifact.load_sidecar(model, kind, features)
        assert "m.json" in str(err.value) or "m.meta.json" in str(err.value)
    artifact.sidecar_path(model).unlink()
    with pytest.raises(ModelError, match="no sidecar m.meta.json"):
        artifact.load_sidecar(model, "compile-cost")
    with pytest.raises(ModelError, match="does not exist"):
        artifact.load_sidecar(tmp_path / "gone.json", "compile-cost")


def test_sidecars_that_name_their_kind_by_format_read_as_that_kind():
    assert artifact.kind_of({"format": "kselect-cost-model", "format_version": 1}) == ("cost-model", 1)
    assert artifact.kind_of({"format": "kselect-compile-cost/1"}) == ("compile-cost", 1)
    assert artifact.kind_of({"format": "something-else"}) == (None, None)
    assert artifact.kind_of({"kind": "amd-backend-winner", "schema_version": 1}) == ("amd-backend-winner", 1)


class _Booster:
    def __init__(self, fail=False):
        self.fail = fail

    def save_model(self, path):
        if self.fail:
            raise RuntimeError("disk full")
        Path(path).write_text('{"learner": {}}')


def test_save_publishes_both_files_or_neither(tmp_path):
    model = tmp_path / "sub" / "m.json"
    assert artifact.save(_Booster(), model, GOOD) == tmp_path / "sub" / "m.meta.json"
    assert artifact.load_sidecar(model, "compile-cost")[1] == GOOD
    with pytest.raises(RuntimeError, match="disk full"):
        artifact.save(_Booster(fail=True), model, {**GOOD, "command": "second"})
    assert artifact.read_sidecar(artifact.sidecar_path(model)) == GOOD  # the first pair, untouched
    assert sorted(p.name for p in model.parent.iterdir()) == ["m.json", "m.meta.json"]
    with pytest.raises(ModelError, match="known kind"):
        artifact.save(_Booster(), model, {"feature_names": []})
    with pytest.raises(ModelError, match="unknown model kind"):
        artifact.header("nonsense", [])


def test_discover_skips_unreadable_sidecars_and_other_kinds(tmp_path):
    _pair(tmp_path, GOOD, "a")
    _pair(tmp_path, {**GOOD, "kind": "cost-model"}, "b")
    (tmp_path / "c.json").write_text("{}")
    (tmp_path / "c.meta.json").write_bytes(b"\xff")
    (tmp_path / "d.json").write_text("{}")  # no sidecar: not a model of any kind
    assert artifact.discover("compile-cost", directory=tmp_path) == [tmp_path / "a.json"]
    assert artifact.discover("cost-model", directory=tmp_path) == [tmp_path / "b.json"]


class _Model(artifact.HyperParameters):
    def __init__(self, depth: int = 3, rate: float = 0.1):
        self.keep_params(locals())


def test_hyper_parameters_are_the_constructor_keywords_saved_and_given_back():
    m = _Model(depth=5)
    assert m.get_params() == {"depth": 5, "rate": 0.1} and m.depth == 5
    assert m.set_params(rate=0.2) is m and m.rate == 0.2
    with pytest.raises(ModelError, match="'width'"):
        m.set_params(width=2)
    again = _Model.with_params(json.loads(json.dumps({**m.get_params(), "retired_knob": 1})))
    assert again.get_params() == m.get_params()
    assert _Model.with_params(None).get_params() == _Model().get_params()
