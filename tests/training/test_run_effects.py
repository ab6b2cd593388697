"""The run-effects fit (training/bench/run_effects.py): each variant's term over a baseline with one
term per run, on numbers whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from kselect.training.bench.run_effects import connected, fit_effects


def _rows(effects: dict, hosts: dict, layout: dict, noise: float = 0.0, seed: int = 0):
    """layout: {run: [variant, ...]}; value = host offset + variant effect (+ noise)."""
    rng = np.random.default_rng(seed)
    return [
        (run, v, hosts[run] + effects[v] + noise * rng.standard_normal())
        for run, variants in layout.items()
        for v in variants
    ]


def test_recovers_variant_terms_across_hosts_of_different_speed():
    """Hosts 1 ms apart would swamp a 0.2 ms gap in pooled medians; the run terms take them
    out, and a run without the baseline still tells verify from DEFAULT."""
    effects = {"kselect-predict": 0.0, "default": 0.03, "kselect-verify": 0.2}
    hosts = {"a": 47.0, "b": 48.0, "c": 47.5}
    layout = {
        "a": ["kselect-predict", "kselect-verify"] * 4,
        "b": ["default", "kselect-verify"] * 4,
        "c": ["default", "kselect-predict"] * 4,
    }
    got = fit_effects(_rows(effects, hosts, layout), "kselect-predict")
    terms = {e["variant"]: e for e in got["effects"]}
    assert terms["kselect-verify"]["diff"] == pytest.approx(0.2, abs=1e-9)
    assert terms["default"]["diff"] == pytest.approx(0.03, abs=1e-9)
    assert terms["kselect-verify"]["processes"] == 8 and got["baseline_processes"] == 8
    assert got["runs"] == 3 and got["residual_sd"] == pytest.approx(0.0, abs=1e-9)


def test_noise_gives_standard_errors_that_cover_the_truth():
    effects = {"default": 0.0, "kselect-verify": 0.2, "kselect-predict": 0.0}
    hosts = {f"r{i}": 47.0 + 0.3 * i for i in range(6)}
    layout = {r: ["default", "kselect-verify", "kselect-predict"] * 3 for r in hosts}
    covered = 0
    for seed in range(40):
        got = fit_effects(_rows(effects, hosts, layout, noise=0.2, seed=seed), "default")
        v = next(e for e in got["effects"] if e["variant"] == "kselect-verify")
        covered += abs(v["diff"] - 0.2) <= 2 * v["se"]
        assert got["dof"] == 54 - 6 - 2
    assert covered >= 34  # ~95 % of 40 within two standard errors
    assert 0.15 < got["residual_sd"] < 0.25


def test_a_variant_no_run_joins_to_the_baseline_is_left_out():
    rows = [("a", "default", 1.0), ("a", "kselect-verify", 1.2), ("b", "plain", 3.0), ("b", "kselect-predict", 3.1)]
    assert connected(rows, "default") == {"default", "kselect-verify"}
    got = fit_effects(rows, "default")
    assert [e["variant"] for e in got["effects"]] == ["kselect-verify"]
    assert got["effects"][0]["diff"] == pytest.approx(0.2)
    # one process each: a term, but no residual to judge it by
    assert got["dof"] == 0 and got["residual_sd"] is None and got["effects"][0]["se"] is None


def test_nothing_to_fit_without_the_baseline_or_another_variant():
    assert fit_effects([("a", "kselect-verify", 1.0)], "default") is None
    assert fit_effects([("a", "default", 1.0), ("a", "default", 1.1)], "default") is None
    assert fit_effects([("a", "default", 1.0), ("a", "kselect-verify", None)], "default") is None
