"""Shared test fixtures: paths to the repo, the committed dataset and ../shared, and the
settings of a recorded GPU bench e2e run."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
H200_DATA = REPO / "data" / "h200-bf16"

# The settings a GPU `bench e2e` run records that every test of its report and pooling shares.
E2E_RUN_SETTINGS = {
    "device": "cuda",
    "model": "m",
    "dtype": "bf16",
    "batch": 8,
    "seq": 1024,
    "steps": 20,
    "warmup": 3,
    "k": 4,
}


@pytest.fixture
def repo() -> Path:
    return REPO
