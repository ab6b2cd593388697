"""Shared test fixtures: paths to the repo, the committed dataset and ../shared."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
H200_DATA = REPO / "data" / "h200-bf16"


@pytest.fixture
def repo() -> Path:
    return REPO
