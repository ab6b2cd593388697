"""A trained model on disk, one schema for every kind: a model file and its JSON sidecar.

Files: `<name>.json` (or `.ubj`), the XGBoost booster in XGBoost's own format (never a pickle),
and `<name>.meta.json`, the sidecar; `paths()` pairs them from either name or the stem.

The sidecar is a JSON object that always holds
- `kind`: which model this is (KINDS: "cost-model", "compile-cost", "amd-backend-winner",
  "grouped-cost-model", "reach-model"),
- `schema_version`: the version of that kind's sidecar, which this code must read (KINDS),
- `feature_names`: the model's inputs, in order, checked against what the code computes;
and, where known, the provenance: `trained_at`, `command` (what made it), `dataset_hash`, and
`fingerprint` (the device it was measured on). A kind adds its own fields (a cost model's
objective, a classifier's classes). Sidecars written before `kind` existed name it by
`format` ("kselect-cost-model" + `format_version`, "kselect-compile-cost/1"); they read as the
same kind and version.

`load_sidecar` checks a pair (both files there, a JSON object, the expected kind and version,
the feature names) with errors that name the file; `save` publishes a pair whole or not at
all; `discover` lists the models of one kind in a folder (by default the shipped models/).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Callable, Mapping, Sequence

from kselect.selector.atomic_write import replacing
from kselect.selector.jsonable import json_default

KINDS = {
    "cost-model": 1,
    "compile-cost": 1,
    "amd-backend-winner": 1,
    "grouped-cost-model": 1,
    "reach-model": 1,
}  # kind -> sidecar schema version
# sidecars that name their kind by `format`: format -> (kind, version; None: read `format_version`)
_FORMATS = {"kselect-cost-model": ("cost-model", None), "kselect-compile-cost/1": ("compile-cost", 1)}
SIDECAR_SUFFIX = ".meta.json"


class ModelError(ValueError):
    """A model file or sidecar that cannot be used; the message names the file and the problem."""


class HyperParameters:
    """scikit-learn style hyper-parameters: the constructor's keywords, each kept as the
    attribute of its name (`keep_params(locals())` in __init__, nothing else happens there), read
    with get_params, changed with set_params, saved in the sidecar and given back by
    `with_params` (keys this code no longer knows are dropped)."""

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        return tuple(n for n in inspect.signature(cls.__init__).parameters if n != "self")

    def keep_params(self, values: Mapping) -> None:
        for name in self.param_names():
            setattr(self, name, values[name])

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in self.param_names():
                raise ModelError(f"unknown hyper-parameter {name!r}: expected one of {self.param_names()}")
            setattr(self, name, value)
        return self

    @classmethod
    def with_params(cls, saved: Mapping | None):
        """A model built with the hyper-parameters a sidecar saved (defaults for the rest)."""
        return cls(**{k: v for k, v in (saved or {}).items() if k in cls.param_names()})


def paths(name: str | Path) -> tuple[Path, Path]:
    """(model file, sidecar) from either file's name or the stem: models/x, models/x.json and
    models/x.meta.json give (models/x.json, models/x.meta.json); models/x.ubj keeps its suffix."""
    p = Path(name)
    if p.name.endswith(SIDECAR_SUFFIX):
        p = p.with_name(p.name[: -len(SIDECAR_SUFFIX)] + ".json")
    elif p.suffix not in (".json", ".ubj"):
        p = p.with_name(p.name + ".json")
    return p, sidecar_path(p)


def sidecar_path(model_path: str | Path) -> Path:
    """The sidecar of a model file: models/h200-bf16.json -> models/h200-bf16.meta.json."""
    p = Path(model_path)
    return p.with_name((p.name[: -len(p.suffix)] if p.suffix else p.name) + SIDECAR_SUFFIX)


def read_json_object(path: Path, what: str) -> dict:
    """A file's JSON object; ModelError naming the file when it cannot be read, is not UTF-8
    or not JSON, or holds something other than an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read {what} {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"cannot read {what} {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"cannot read {what} {path}: a JSON {type(data).__name__}, not an object")
    return data


def read_sidecar(path: str | Path) -> dict:
    """A sidecar's JSON object (ModelError naming the file otherwise); no schema check."""
    return read_json_object(Path(path), "model sidecar")


def kind_of(meta: Mapping) -> tuple[str | None, object]:
    """(kind, schema version) a sidecar declares, reading the older `format` field too."""
    if "kind" in meta:
        return meta.get("kind"), meta.get("schema_version")
    kind, version = _FORMATS.get(str(meta.get("format")), (None, None))
    return kind, (meta.get("format_version") if kind and version is None else version)


def header(kind: str, feature_names: Sequence[str], **provenance) -> dict:
    """The fields every sidecar of `kind` starts with; `provenance` (trained_at, command,
    dataset_hash, fingerprint, ...) as given, None values left out."""
    if kind not in KINDS:
        raise ModelError(f"unknown model kind {kind!r}: expected one of {sorted(KINDS)}")
    return {
        "kind": kind,
        "schema_version": KINDS[kind],
        "feature_names": list(feature_names),
        **{k: v for k, v in provenance.items() if v is not None},
    }


def provenance(meta: Mapping) -> dict:
    """What made a model: trained_at, command, dataset_hash, fingerprint (None where unknown;
    `training_command` is the older name of `command`)."""
    return {
        "trained_at": meta.get("trained_at"),
        "command": meta.get("command", meta.get("training_command")),
        "dataset_hash": meta.get("dataset_hash"),
        "fingerprint": meta.get("fingerprint"),
    }


def load_sidecar(
    name: str | Path, kind: str, feature_names: Sequence[str] | None = None, required: Sequence[str] = ()
) -> tuple[Path, dict]:
    """(model file, sidecar) of the model `name` (paths()), checked: both files exist, the
    sidecar is a JSON object of `kind` at the schema version this code reads, with the
    `required` fields and, when given, exactly these `feature_names`. ModelError names the file."""
    model_path, meta_path = paths(name)
    if not model_path.is_file():
        raise ModelError(
            f"model file {model_path} does not exist (a model is NAME.json plus its sidecar NAME{SIDECAR_SUFFIX})"
        )
    if not meta_path.is_file():
        raise ModelError(f"model {model_path} has no sidecar {meta_path.name}: cannot check what it is")
    meta = read_sidecar(meta_path)
    got_kind, version = kind_of(meta)
    if got_kind != kind:
        raise ModelError(f"{meta_path} is not a {kind} sidecar (kind {got_kind!r})")
    if version != KINDS[kind]:
        raise ModelError(f"{meta_path}: {kind} sidecar schema version {version!r}, this kselect reads {KINDS[kind]}")
    missing = [key for key in ("feature_names", *required) if key not in meta]
    if missing:
        raise ModelError(f"{meta_path}: sidecar lacks {missing}")
    if feature_names is not None and list(meta["feature_names"]) != list(feature_names):
        raise ModelError(
            f"{model_path} was trained on other features than this kselect computes "
            f"({len(meta['feature_names'])} vs {len(feature_names)}): retrain it"
        )
    return model_path, meta


def read_model_json(model_path: Path) -> dict:
    """An XGBoost JSON model file as a dict, for numpy evaluation (forest.TreeEnsemble)."""
    return read_json_object(model_path, "XGBoost model")


def save(booster, model_path: str | Path, meta: Mapping) -> Path:
    """Save an XGBoost booster to `model_path` and `meta` to its sidecar, whole or not at all:
    both go to temp files first and the sidecar is published last, so a reader (or a save
    killed or failing midway) never meets a half-written pair, and a failed save leaves the
    previous model as it was. Returns the sidecar path."""
    model_path = Path(model_path)
    kind, _ = kind_of(meta)
    if kind not in KINDS:
        raise ModelError(f"a sidecar needs a known kind (artifact.header), got {kind!r}")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    mp = sidecar_path(model_path)
    text = json.dumps(dict(meta), indent=2, sort_keys=True, default=json_default) + "\n"
    with replacing(mp) as meta_tmp:
        meta_tmp.write_text(text, encoding="utf-8")
        with replacing(model_path, suffix=model_path.suffix) as booster_tmp:  # XGBoost reads the format off it
            booster.save_model(str(booster_tmp))
    return mp


def discover(kind: str, where: Callable[[dict], bool] | None = None, directory: str | Path | None = None) -> list[Path]:
    """The model files of `kind` in `directory` (default the shipped models/), by name, whose
    sidecar declares that kind (and satisfies `where`); a file without a readable sidecar is
    not a model of any kind."""
    if directory is None:
        from kselect.models import MODELS_DIR as directory
    out = []
    for p in sorted(Path(directory).iterdir()):
        if p.suffix not in (".json", ".ubj") or p.name.endswith(SIDECAR_SUFFIX) or not sidecar_path(p).is_file():
            continue
        try:
            meta = read_sidecar(sidecar_path(p))
        except ModelError:
            continue
        if kind_of(meta)[0] == kind and (where is None or where(meta)):
            out.append(p)
    return out
