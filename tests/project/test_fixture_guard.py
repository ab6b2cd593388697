"""The collection check of tests/fixture_guard.py: a test deselected on this machine (a `gpu`
one) that asks for a fixture nobody defines stops the run at collection, naming it; a tree
whose fixtures all exist runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

GOOD = """
import pytest

@pytest.fixture
def made():
    return 3

@pytest.mark.parametrize("n", [1, 2])
def test_uses_what_exists(made, n, request, tmp_path):
    assert made + n > 3
"""

BAD = """
import pytest

@pytest.mark.gpu
def test_on_the_gpu(renamed_long_ago):
    pass
"""


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_case.py").write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs a GPU\n")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fixture_guard", "-p", "no:cacheprovider", "-m", "not gpu", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_deselected_test_asking_for_a_missing_fixture_stops_the_run(tmp_path):
    done = _run(tmp_path, BAD)
    assert done.returncode != 0, done.stdout
    assert "test_on_the_gpu: renamed_long_ago" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_tree_whose_fixtures_exist_runs(tmp_path):
    done = _run(tmp_path, GOOD)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
