"""The code passes the linter configured in pyproject.toml (ruff: pycodestyle and pyflakes)."""
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    res = subprocess.run([ruff, "check", "selector", "training", "kernels", "tests"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
