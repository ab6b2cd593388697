"""Settings declared once, as a frozen dataclass whose fields say everything about themselves.

Each field is made by `setting(default, kind, help, env=...)`: its default, its `Kind` (how a
value is checked as a Python keyword and parsed from environment text: type, range, choices),
its help, and the environment variable that sets it (if any). From that one declaration:

- `Settings(**keywords)` checks and normalises every value (a bad one raises SettingError
  naming it; an unknown keyword raises UnknownSettingError, also a TypeError);
- `env_values(cls, environ)` parses the declared environment variables (OptionError naming
  the variable on a bad value) and `describe(cls)` prints them with their types and help;
- `options(cls)` lists the environment options (name, field, kind, default, help);
- `as_keywords(settings)` gives the keywords that make the same settings again.

Stdlib only: the runtime plug-in and the kernels package both declare their settings here.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import os
import textwrap
from typing import Any, Mapping

_SAME = object()  # env_default: the field's own default


class SettingError(ValueError):
    """A keyword of the wrong type, outside its range or choices."""


class UnknownSettingError(SettingError, TypeError):
    """A keyword no field declares (a TypeError too, as Python's own unexpected keyword is)."""


class OptionError(ValueError):
    """An environment variable with a value outside its declared type or choices."""


def expand_path(path) -> str:
    """A path as the user meant it: `~` and environment variables ($HOME, ${XDG_CACHE_HOME})
    expanded."""
    return os.path.expandvars(os.path.expanduser(os.fspath(path)))


class Kind:
    """How one setting's values are checked (`check`, a Python value) and read from the
    environment (`parse`, its text); `name` describes it in help."""

    name = "str"

    def check(self, field: str, value):
        return value

    def parse(self, raw: str):
        return raw

    def describe(self) -> str:
        return self.name

    def describe_keyword(self) -> str:
        """The kind as a Python keyword's help names it."""
        return self.describe()


class Number(Kind):
    """A finite number of type `cast` (int or float) at least `least`; never a bool."""

    def __init__(self, cast: type, least):
        self.cast, self.least = cast, least
        self.name = f"{cast.__name__} >= {least}"

    def check(self, field, value):
        exact = numbers.Integral if self.cast is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, exact):
            noun = "an int" if self.cast is int else "a number"
            raise SettingError(f"{field} must be {noun} >= {self.least}, got {type(value).__name__} {value!r}")
        if not (math.isfinite(value) and value >= self.least):
            raise SettingError(f"{field} must be a finite {self.name}, got {value}")
        return self.cast(value)

    def parse(self, raw):
        return self.check("value", self.cast(raw))


class Flag(Kind):
    """True or False (numpy's bool too; never "off" or 0); in the environment on|off."""

    name = "on|off"
    ON, OFF = ("1", "on", "true", "yes"), ("0", "off", "false", "no")

    def check(self, field, value):
        if isinstance(value, bool) or type(value).__name__ == "bool_":
            return bool(value)
        raise SettingError(f"{field} must be True or False, got {type(value).__name__} {value!r}")

    def describe_keyword(self) -> str:
        return "bool"

    def parse(self, raw):
        low = raw.lower()
        if low in self.ON:
            return True
        if low in self.OFF:
            return False
        raise ValueError(raw)


class Choice(Kind):
    """One of `choices` (the environment's text is read case-insensitively)."""

    name = "str"

    def __init__(self, *choices: str):
        self.choices = choices

    def check(self, field, value):
        if not isinstance(value, str) or value not in self.choices:
            raise SettingError(f"{field} must be one of {self.choices}, got {value!r}")
        return value

    def parse(self, raw):
        value = raw.lower()
        if value not in self.choices:
            raise ValueError(raw)
        return value

    def describe(self) -> str:
        return f"str {{{', '.join(repr(c) if c == '' else c for c in self.choices)}}}"


class Text(Kind):
    """Any string."""

    def check(self, field, value):
        if not isinstance(value, str):
            raise SettingError(f"{field} must be a str, got {type(value).__name__} {value!r}")
        return value


class OptionalPath(Kind):
    """A path with `~` and environment variables expanded, or None ("" means None)."""

    name = "path"

    def check(self, field, value):
        if value is None or value == "":
            return None
        if isinstance(value, (str, os.PathLike)):
            return expand_path(value)
        raise SettingError(f"{field} must be a path (str or os.PathLike) or None, got {type(value).__name__}")

    def parse(self, raw):
        return self.check("value", raw)


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a settings field says about itself (dataclass field metadata "setting")."""

    kind: Kind
    help: str
    env: str | None = None
    env_default: Any = _SAME


def setting(default, kind: Kind, help: str, env: str | None = None, env_default=_SAME, **extra):
    """A settings field: `env` names its environment variable (None: a keyword only);
    `env_default` is what an unset variable means where that differs from the keyword default;
    `extra` goes into the field's metadata for the settings' own derivations."""
    return dataclasses.field(default=default, metadata={"setting": Spec(kind, help, env, env_default), **extra})


def spec(field: dataclasses.Field) -> Spec:
    return field.metadata["setting"]


@dataclasses.dataclass(frozen=True)
class EnvOption:
    """One environment option of a settings class, for tables and help."""

    name: str
    field: str
    kind: Kind
    default: Any
    help: str

    def parse(self, raw: str | None):
        if raw is None or raw.strip() == "":
            return self.default
        try:
            return self.kind.parse(raw.strip())
        except (ValueError, SettingError):
            raise OptionError(f"{self.name}={raw!r}: expected {self.kind.describe()}") from None

    def describe(self) -> str:
        return f"{self.name} ({self.kind.describe()}, default {self.default!r}): {self.help}"


class Settings:
    """Base of a frozen settings dataclass: values checked and normalised on construction
    (each field by its kind, then `check_together` for rules between fields)."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, spec(f).kind.check(f.name, getattr(self, f.name)))
        self.check_together()

    def check_together(self) -> None:
        """Rules that tie fields together; raise SettingError."""

    @classmethod
    def from_keywords(cls, **given):
        """The settings of these keywords (the rest at their defaults); unknown keywords are
        named in the error with every known one."""
        known = field_names(cls)
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise UnknownSettingError(f"unknown setting(s) {unknown}: expected some of {sorted(known)}")
        return cls(**given)

    @classmethod
    def signature(cls) -> inspect.Signature:
        return signature(cls)


def field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def as_keywords(settings) -> dict:
    """{field: value}, the keywords that make `settings` again. Not dataclasses.asdict: that
    deep-copies every value, and a setting may hold a live object (a loaded model)."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}


def options(cls) -> tuple[EnvOption, ...]:
    """The environment options of a settings class, in field order."""
    out = []
    for f in dataclasses.fields(cls):
        s = spec(f)
        if s.env:
            out.append(EnvOption(s.env, f.name, s.kind, f.default if s.env_default is _SAME else s.env_default, s.help))
    return tuple(out)


def env_values(cls, environ: Mapping[str, str] | None = None) -> dict:
    """{field: value} for every field with an environment variable, read from `environ`
    (default os.environ); an unset or empty variable gives its environment default."""
    env = os.environ if environ is None else environ
    return {o.field: o.parse(env.get(o.name)) for o in options(cls)}


def describe(cls) -> str:
    """One help line per environment option: name, type, default, description."""
    return "\n".join(o.describe() for o in options(cls))


def describe_keywords(cls, indent: str = "    ") -> str:
    """One help paragraph per field, for a docstring: name (kind, default): help."""
    out = []
    for f in dataclasses.fields(cls):
        s = spec(f)
        env = f"; env {s.env}" if s.env else ""
        out.append(
            textwrap.fill(
                f"{f.name} ({s.kind.describe_keyword()}, default {f.default!r}{env}): {s.help}",
                width=96,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
            )
        )
    return "\n".join(out) + "\n"


def signature(cls, return_annotation=inspect.Signature.empty) -> inspect.Signature:
    """A keyword signature of every field with its default, for a function taking **settings."""
    return inspect.Signature(
        [
            inspect.Parameter(
                f.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD if i == 0 else inspect.Parameter.KEYWORD_ONLY,
                default=f.default,
            )
            for i, f in enumerate(dataclasses.fields(cls))
        ],
        return_annotation=return_annotation,
    )


def env_value(cls, field: str, environ: Mapping[str, str] | None = None):
    """One field's value from its environment variable (`env_values` for one field only, so a
    bad value elsewhere does not stop this read)."""
    env = os.environ if environ is None else environ
    for o in options(cls):
        if o.field == field:
            return o.parse(env.get(o.name))
    raise KeyError(f"{cls.__name__} declares no environment option for {field!r}")
