"""verify's own measurement: the kept templates compile in the background (selector/verify_timing.py
Compiles) while the caller makes operands and runs ATen; a failed compile is reported, not raised."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("torch")

from kselect.selector.verify_timing import Compiles  # noqa: E402


class _Template:
    """A kept choice whose compile blocks until released."""

    def __init__(self, release: threading.Event, error: str | None = None):
        self.release, self.error = release, error
        self.started, self.compiled = threading.Event(), False

    def precompile(self):
        self.started.set()
        assert self.release.wait(10), "never released"
        if self.error:
            raise RuntimeError(self.error)
        self.compiled = True


def test_templates_compile_in_the_background_and_failures_are_reported():
    release = threading.Event()
    ok, bad = _Template(release), _Template(release, error="ptxas: out of registers")
    compiles = Compiles([ok, bad])
    assert compiles.where == "threads" and compiles.todo == [0, 1]
    # both compiles are under way while the caller goes on
    assert ok.started.wait(10) and bad.started.wait(10)
    assert not ok.compiled and not compiles.done()
    release.set()
    failed = compiles.wait()
    assert ok.compiled and compiles.done()
    assert list(failed) == [1] and "RuntimeError: ptxas: out of registers" in failed[1]
    assert compiles.wait() == failed   # idempotent: measure() waits again on its way out


def test_nothing_to_compile_starts_nothing():
    compiles = Compiles([object(), object()])   # no precompile: nothing to compile
    assert compiles.where == "none" and compiles.todo == [] and compiles.done() and compiles.wait() == {}
