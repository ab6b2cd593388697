"""The timing harness's interleaved rounds, on the CPU (host wall-clock path)."""

import time

import pytest

from kselect.kernels.timing import time_interleaved, time_runners


def _sleeper(seconds: float, log: list, name: str):
    def run():
        log.append(name)
        time.sleep(seconds)

    return run


def test_rounds_read_every_kernel_in_alternating_order():
    """Fails if rounds stop alternating: the second round must read the kernels backwards."""
    log: list = []
    got = time_interleaved(
        [[_sleeper(0.0005, log, "a")], [_sleeper(0.0015, log, "b")]], rounds=2, replays=1, target_ms=0.1, device="cpu"
    )
    assert len(got.ms) == 2 and all(len(r) == 2 for r in got.ms)
    timed = [n for n in log[-4 * 1 :]]  # one call per replay at target 0.1 ms: the last four reads
    assert timed == ["a", "b", "b", "a"]
    # the fastest reading of each: a busy machine only ever adds time to a sleep
    assert got.timing(1).min_ms > 2 * got.timing(0).min_ms


def test_time_runners_reads_as_before():
    got = time_runners([lambda: time.sleep(0.001)], target_ms=0.5, replays=3, device="cpu")
    assert got.method == "cpu_wall" and got.reps >= 3
    assert 0.9 < got.median_ms < 5


def test_bad_rounds_are_refused():
    with pytest.raises(ValueError, match="rounds"):
        time_interleaved([[lambda: None]], rounds=0, device="cpu")
