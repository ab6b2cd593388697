"""The scripts kept in reports/ (each the command that made its numbers) still find every
kselect module and name they import, so a report can be re-run against today's code."""

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "reports").rglob("*.py"))


def _kselect_names(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kselect"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("kselect"):
                    yield alias.name, None


def _resolves(module: str, name: str | None) -> bool:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return False
    if name is None or hasattr(mod, name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO / "reports")))
def test_report_script_imports_resolve(script):
    pytest.importorskip("pandas")
    missing = [f"{m}.{n}" if n else m for m, n in _kselect_names(script) if not _resolves(m, n)]
    assert not missing, missing
