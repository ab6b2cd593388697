"""The bench's kselect flags are made from config.SelectorSettings: they parse to the same
settings enable() gets, through the run record a results.json keeps."""

from __future__ import annotations

import argparse
import json

import pytest

from kselect.selector.config import DEFAULTS, SETTINGS, SelectorSettings
from kselect.training.bench import common
from kselect.training.cli import flags


def _parse(argv):
    p = argparse.ArgumentParser()
    flags.add_policy_args(p)
    return p, p.parse_args(argv)


def test_flags_round_trip_to_the_same_settings():
    p, args = _parse([])
    assert set(common.BENCH_SETTINGS) <= set(SETTINGS)
    assert common.policy_settings(args) == {n: getattr(DEFAULTS, n) for n in common.BENCH_SETTINGS}
    _, args = _parse(
        [
            "--k",
            "2",
            "--fixed-k",
            "--min-k",
            "2",
            "--aten-margin",
            "0.5",
            "--compile-budget",
            "0",
            "--late-decision",
            "--cold-start",
        ]
    )
    record = json.loads(json.dumps(common.policy_settings(args)))  # as a plan or results.json keeps it
    got = SelectorSettings(mode="verify", **common.policy_keywords(record))
    assert got == SelectorSettings(
        mode="verify",
        k=2,
        adaptive_k=False,
        min_k=2,
        aten_margin=0.5,
        compile_budget=0.0,
        early_decision=False,
        warm_start=False,
    )
    # a record that says fixed_k reads the same; one without a setting takes enable()'s default
    assert common.policy_keywords({"k": 2, "fixed_k": True})["adaptive_k"] is False
    assert common.policy_keywords({"k": 2})["compile_budget"] == DEFAULTS.compile_budget
    helps = {a.dest: p._get_formatter()._expand_help(a) for a in p._actions if a.help}
    for name in common.BENCH_SETTINGS:  # as --help prints it ('%' escaped for argparse, then expanded)
        assert SelectorSettings.__dataclass_fields__[name].metadata["setting"].help in helps[name]


@pytest.mark.parametrize("argv", [["--k", "0"], ["--k", "two"], ["--aten-margin", "-1"], ["--min-k", "1.5"]])
def test_a_bad_flag_value_is_refused_by_argparse(argv, capsys):
    with pytest.raises(SystemExit):
        _parse(argv)
    assert argv[0] in capsys.readouterr().err
