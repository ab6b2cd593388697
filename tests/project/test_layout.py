"""The layout's rules hold in the code: imports flow training -> selector -> kernels, only the
command line imports the command line, and every package folder is in the wheel."""

import ast
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
TOP = ("kernels", "selector", "training")


def _imports(path: Path) -> set[str]:
    """Absolute kselect modules a source file imports (relative imports resolved)."""
    rel = path.relative_to(REPO).with_suffix("")
    package = ["kselect", *rel.parts[:-1]]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("kselect.")}


def _sources(top: str):
    return sorted((REPO / top).rglob("*.py"))


@pytest.mark.parametrize(
    "top,forbidden", [("kernels", ("kselect.selector", "kselect.training")), ("selector", ("kselect.training",))]
)
def test_imports_flow_one_way(top, forbidden):
    wrong = [
        f"{p.relative_to(REPO)} imports {m}" for p in _sources(top) for m in _imports(p) if m.startswith(forbidden)
    ]
    assert not wrong, wrong


def test_only_the_command_line_imports_the_command_line():
    wrong = [
        f"{p.relative_to(REPO)} imports {m}"
        for top in TOP
        for p in _sources(top)
        if "cli" not in p.relative_to(REPO).parts
        for m in _imports(p)
        if m.startswith("kselect.training.cli")
    ]
    assert not wrong, wrong


def test_every_package_folder_ships_in_the_wheel():
    declared = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        "kselect." + ".".join(p.parent.relative_to(REPO).parts)
        for top in TOP
        for p in (REPO / top).rglob("__init__.py")
    }
    assert folders <= declared, sorted(folders - declared)


def _parses_arguments(path: Path) -> list[str]:
    """Where a source file imports argparse or calls `add_argument` / `add_parser`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            found.append(f"{node.lineno}: import argparse")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            found.append(f"{node.lineno}: from argparse import ...")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("add_argument", "add_parser", "add_subparsers", "parse_args")
        ):
            found.append(f"{node.lineno}: .{node.func.attr}(...)")
    return found


def test_only_the_command_line_parses_arguments():
    """Argument parsing lives in training/cli/ alone; the logic modules take typed arguments."""
    wrong = [
        f"{p.relative_to(REPO)}:{where}"
        for top in TOP
        for p in _sources(top)
        if p.parent != REPO / "training" / "cli"
        for where in _parses_arguments(p)
    ]
    assert not wrong, wrong


def test_the_argument_check_sees_a_parser(tmp_path):
    """The check above finds each way a module could build a parser."""
    src = tmp_path / "mod.py"
    src.write_text(
        "import argparse as ap\nfrom argparse import ArgumentParser\n"
        "def add(sub):\n    p = sub.add_parser('x')\n    p.add_argument('--y')\n"
    )
    assert [w.split(": ", 1)[1] for w in _parses_arguments(src)] == [
        "import argparse",
        "from argparse import ...",
        ".add_parser(...)",
        ".add_argument(...)",
    ]
