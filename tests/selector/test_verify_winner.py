"""Verify's pick: a template replaces ATen only when faster beyond the noise of the same rounds."""

import math

import pytest

from kselect.selector.verify.pick import MIN_MARGIN, Measured, VerifyTimingUnavailable


def _measured(rounds: dict[int, list[float]], reference: int | None = 0) -> Measured:
    import statistics

    ms = [statistics.median(rounds[i]) if i in rounds else math.inf for i in range(max(rounds) + 1)]
    return Measured(ms=ms, rounds=rounds, reference=reference)


def test_a_template_faster_in_every_round_beyond_the_margin_wins():
    """Fails if the rule never lets a template past ATen."""
    got = _measured({0: [10.0, 10.1, 10.0], 1: [9.0, 9.1, 9.0], 2: [9.5, 9.5, 9.6]})
    assert got.best == 1


def test_a_gap_inside_the_minimum_margin_keeps_aten():
    """Fails if the plain minimum decides again: the template reads 0.5 % faster in every round."""
    assert MIN_MARGIN > 0.005
    got = _measured({0: [10.0, 10.0, 10.0], 1: [9.95, 9.95, 9.95]})
    assert got.ms[1] < got.ms[0]
    assert got.best == 0


def test_a_gap_inside_the_rounds_spread_keeps_aten():
    """Fails if the margin ignores the spread: 3 % faster in the median, but the paired ratios span 0.90-1.04."""
    got = _measured({0: [10.0, 10.0, 10.0], 1: [9.0, 9.7, 10.4]})
    assert got.best == 0


def test_paired_rounds_cancel_drift_that_falls_on_both():
    """Fails if the rounds are compared unpaired: both slow down together by 20 % across rounds,
    the template stays 5 % ahead in each; the pooled spreads alone would hide it."""
    got = _measured({0: [10.0, 11.0, 12.0], 1: [9.5, 10.45, 11.4]})
    assert got.best == 1


def test_without_aten_rounds_the_fastest_reading_wins():
    got = _measured({1: [9.0], 2: [8.0]}, reference=None)
    assert got.best == 2


def test_nothing_ran_raises():
    with pytest.raises(VerifyTimingUnavailable):
        Measured(ms=[math.inf, math.inf]).best
