"""Benchmark rounds: every other one reversed, so no variant always runs first or last."""

from kselect.training.bench.run_order import alternating_rounds


def test_odd_rounds_run_in_reverse_so_each_variant_leads_as_often_as_it_trails():
    got = alternating_rounds(["plain", "default", "kselect-verify"], 4)
    assert got == [
        (0, "plain"),
        (0, "default"),
        (0, "kselect-verify"),
        (1, "kselect-verify"),
        (1, "default"),
        (1, "plain"),
        (2, "plain"),
        (2, "default"),
        (2, "kselect-verify"),
        (3, "kselect-verify"),
        (3, "default"),
        (3, "plain"),
    ]
    # over each pair of rounds, default directly follows plain as often as it precedes it
    pairs = [(a, b) for (ra, a), (rb, b) in zip(got, got[1:]) if ra == rb]
    assert pairs.count(("plain", "default")) == pairs.count(("default", "plain")) == 2


def test_one_round_keeps_the_given_order():
    assert alternating_rounds(["default", "kselect-verify"], 1) == [(0, "default"), (0, "kselect-verify")]


def test_items_asked_last_end_every_round_unreversed():
    got = alternating_rounds(["plain", "kselect-verify", "default", "exhaustive"], 2, last=("exhaustive",))
    assert got == [
        (0, "plain"),
        (0, "kselect-verify"),
        (0, "default"),
        (0, "exhaustive"),
        (1, "default"),
        (1, "kselect-verify"),
        (1, "plain"),
        (1, "exhaustive"),
    ]
