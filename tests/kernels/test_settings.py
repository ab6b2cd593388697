"""kernels/settings.py: a frozen dataclass declares its settings once; keywords, the environment
and help are read from that declaration."""

from __future__ import annotations

import dataclasses
import os

import pytest

from kselect.kernels import settings
from kselect.kernels.flydsl import options as flydsl_options
from kselect.kernels.settings import Choice, Flag, Number, OptionalPath, setting


@dataclasses.dataclass(frozen=True)
class Demo(settings.Settings):
    level: int = setting(3, Number(int, 1), "how hard", env="DEMO_LEVEL")
    rate: float = setting(0.5, Number(float, 0), "how often", env="DEMO_RATE")
    loud: bool = setting(False, Flag(), "say it", env="DEMO_LOUD")
    style: str = setting("plain", Choice("plain", "fancy"), "how", env="DEMO_STYLE", env_default="fancy")
    where: str | None = setting(None, OptionalPath(), "a folder")

    def check_together(self):
        if self.loud and self.style == "plain":
            raise settings.SettingError("loud needs style fancy")


def test_keywords_are_checked_and_normalised():
    d = Demo.from_keywords(level=2, rate=1, where="~/x")
    assert (d.level, d.rate, type(d.rate), d.where) == (2, 1.0, float, os.path.expanduser("~/x"))
    assert Demo(**settings.as_keywords(d)) == d
    for bad, name in (
        ({"level": 0}, "level"),
        ({"level": True}, "level"),
        ({"rate": float("nan")}, "rate"),
        ({"loud": 1}, "loud"),
        ({"style": "odd"}, "style"),
        ({"where": 3}, "where"),
        ({"loud": True}, "loud needs"),
    ):
        with pytest.raises(settings.SettingError, match=name):
            Demo.from_keywords(**bad)
    with pytest.raises(settings.UnknownSettingError, match=r"\['levle'\]") as err:
        Demo.from_keywords(levle=2)
    assert isinstance(err.value, TypeError)


def test_environment_is_parsed_against_the_declaration():
    assert settings.env_values(Demo, {}) == {"level": 3, "rate": 0.5, "loud": False, "style": "fancy"}
    got = settings.env_values(Demo, {"DEMO_LEVEL": "7", "DEMO_RATE": "0", "DEMO_LOUD": "On", "DEMO_STYLE": "PLAIN"})
    assert got == {"level": 7, "rate": 0.0, "loud": True, "style": "plain"}
    for var, raw in (
        ("DEMO_LEVEL", "0"),
        ("DEMO_LEVEL", "two"),
        ("DEMO_RATE", "-1"),
        ("DEMO_LOUD", "maybe"),
        ("DEMO_STYLE", "odd"),
    ):
        with pytest.raises(settings.OptionError, match=f"{var}={raw!r}"):
            settings.env_values(Demo, {var: raw})
    # one field read alone is not stopped by another's bad value
    assert settings.env_value(Demo, "rate", {"DEMO_LEVEL": "0", "DEMO_RATE": "2"}) == 2.0
    text = settings.describe(Demo)
    assert text.splitlines()[0] == "DEMO_LEVEL (int >= 1, default 3): how hard" and "where" not in text
    assert "DEMO_STYLE (str {plain, fancy}, default 'fancy')" in text


def test_flydsl_options_use_the_same_declaration(monkeypatch):
    assert [o.name for o in flydsl_options.OPTIONS] == [
        "KSELECT_FLYDSL_CACHE",
        "KSELECT_FLYDSL_ARCH",
        "KSELECT_FLYDSL_TIMEOUT",
        "KSELECT_FLYDSL_WORKERS",
        "KSELECT_FLYDSL_WORKER_FAULT",
        "ROCM_PATH",
    ]
    monkeypatch.setenv("KSELECT_FLYDSL_TIMEOUT", "30")
    assert flydsl_options.get("timeout") == 30 and flydsl_options.get("workers") == 2
    monkeypatch.setenv("KSELECT_FLYDSL_WORKERS", "0")
    with pytest.raises(settings.OptionError, match="KSELECT_FLYDSL_WORKERS"):
        flydsl_options.get("workers")
    monkeypatch.setenv("KSELECT_FLYDSL_WORKER_FAULT", "explode")
    with pytest.raises(settings.OptionError, match="abort"):
        flydsl_options.get("worker_fault")
    assert all(o.name in flydsl_options.describe() for o in flydsl_options.OPTIONS)
