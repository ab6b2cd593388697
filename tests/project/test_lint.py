"""The code passes the linter and the formatter configured in pyproject.toml (ruff: pycodestyle,
pyflakes, import order, and `ruff format`'s layout)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ["selector", "training", "kernels", "tests"]


def _ruff(*args):
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    return subprocess.run([ruff, *args, *FOLDERS], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [("check",), ("format", "--check")], ids=["lint", "format"])
def test_ruff_is_clean(args):
    res = _ruff(*args)
    assert res.returncode == 0, res.stdout + res.stderr
