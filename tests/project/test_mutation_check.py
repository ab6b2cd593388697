"""The mutation check (reports/2026-12-06-mutation-check/mutate.py) still applies to today's code:
each one-line bug it plants finds its text exactly once, the mutated file still parses, and the
tests that guard it exist. Running the mutations takes minutes; this takes milliseconds, and
fails as soon as a change moves what a mutation needs (then update its path or text)."""

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "reports" / "2026-12-06-mutation-check" / "mutate.py"


def _mutations():
    spec = importlib.util.spec_from_file_location("mutation_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.MUTATIONS


@pytest.mark.parametrize("mutation", _mutations(), ids=lambda m: m.name)
def test_each_mutation_still_applies(mutation):
    text = (REPO / mutation.path).read_text()
    assert text.count(mutation.old) == 1, f"{mutation.path} no longer holds {mutation.old!r} exactly once"
    ast.parse(text.replace(mutation.old, mutation.new), mutation.path)
    for node in mutation.tests:
        path, name = node.split("::")
        tests = {n.name for n in ast.walk(ast.parse((REPO / path).read_text())) if isinstance(n, ast.FunctionDef)}
        assert name in tests, f"{node} does not exist"
    assert mutation.device in ("cpu", "gpu")
