"""selector/decide/switch_interval.py: the short switch interval is set for the outermost decision and restored
exactly once, also when decisions of two threads overlap or one raises."""

from __future__ import annotations

import sys
import threading

import pytest

from kselect.selector.decide.switch_interval import DECISION_SWITCH_INTERVAL_S, short_switch_interval


def test_nested_and_failing_blocks_restore_the_interval():
    before = sys.getswitchinterval()
    with short_switch_interval():
        assert sys.getswitchinterval() == pytest.approx(DECISION_SWITCH_INTERVAL_S)
        with short_switch_interval():
            assert sys.getswitchinterval() == pytest.approx(DECISION_SWITCH_INTERVAL_S)
        assert sys.getswitchinterval() == pytest.approx(DECISION_SWITCH_INTERVAL_S)  # inner exit keeps it
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError):
        with short_switch_interval():
            raise RuntimeError("a ranker failure")
    assert sys.getswitchinterval() == before


def test_overlapping_threads_leave_the_interval_as_found():
    before = sys.getswitchinterval()
    inside, release = threading.Barrier(2), threading.Event()
    seen = []

    def decide():
        with short_switch_interval():
            inside.wait(timeout=10)
            release.wait(timeout=10)
            seen.append(sys.getswitchinterval())

    threads = [threading.Thread(target=decide) for _ in range(2)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert seen == pytest.approx([DECISION_SWITCH_INTERVAL_S] * 2)
    assert sys.getswitchinterval() == before
