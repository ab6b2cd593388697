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


# -- the selector's floors, no circles, and where private Inductor API may be used ---------------
def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return "kselect." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """kselect module -> the kselect modules it imports (anywhere in the file), each resolved to
    the module that defines it (an imported name -> its module)."""
    modules = {_module(p): p for top in TOP for p in _sources(top)}

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    return {m: {resolve(i) for i in _imports(p)} - {"", m} for m, p in modules.items()}


# the selector's floors, top to bottom (docs/layout.md): a module imports its own floor or lower
SELECTOR_FLOORS = (
    ("the public face", ("kselect.selector", "kselect.selector.autoload", "kselect.selector.doctor")),
    ("the Inductor adapter", ("kselect.selector.inductor",)),
    ("verify and decide", ("kselect.selector.verify", "kselect.selector.decide")),
    ("the op kinds and backend joins", ("kselect.selector.ops", "kselect.selector.backends")),
    ("model and warm-up", ("kselect.selector.model", "kselect.selector.warmup")),
    ("the private-Inductor surface", ("kselect.selector.compat",)),
    ("settings and small helpers", ("kselect.selector.",)),  # config, warn, logs, fingerprint, ...
)


def _floor(module: str) -> int | None:
    """0 for the top floor; None outside selector/. The longest prefix that matches names the floor."""
    if not module.startswith("kselect.selector"):
        return None
    best = None
    for height, (_, prefixes) in enumerate(SELECTOR_FLOORS):
        for prefix in prefixes:
            hit = module == prefix or module.startswith(prefix if prefix.endswith(".") else prefix + ".")
            if hit and (best is None or len(prefix) > best[0]):
                best = (len(prefix), height)
    return best[1]


def test_selector_imports_run_down_its_floors():
    """Catches a module importing one of a higher floor (decide/ reaching up to the Inductor
    adapter, compat/ to an op module, model/ to decide/), at module level or inside a function."""
    graph = _graph()
    wrong = [
        f"{m} ({SELECTOR_FLOORS[_floor(m)][0]}) imports {d} ({SELECTOR_FLOORS[_floor(d)][0]})"
        for m, deps in sorted(graph.items())
        if _floor(m) is not None
        for d in sorted(deps)
        if _floor(d) is not None and _floor(d) < _floor(m)
    ]
    assert not wrong, wrong


def test_no_module_imports_itself_round_a_circle():
    """Catches two or more kselect modules importing each other, directly or round a longer loop
    (at module level or inside a function: a lazy import hides a circle, it does not break it)."""
    graph = _graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


# where kernels/ and training/ touch torch._inductor, and why; selector/ does only in compat/
PRIVATE_INDUCTOR_ALLOWED = {
    "kernels/flydsl/inductor.py": "FlyDSL's Inductor join registers its template heuristic and extern choice",
    "kernels/grouped/cross_compile.py": "loads Inductor's grouped template source to compile it for sm_90 here",
    "kernels/grouped/run.py": "runs the grouped lowering's own choices on a routing's offsets",
    "kernels/grouped/space.py": "reads Inductor's grouped config list: the candidates it considers",
    "kernels/triton/space.py": "reads Inductor's Triton config heuristics: the candidates it considers",
    "training/bench/e2e_worker.py": "sets Inductor's settings as each bench variant's user would",
    "training/bench/gemm_worker.py": "sets Inductor's settings as each bench variant's user would",
    "training/bench/rank.py": "times kselect's ranking over Inductor's own template choices",
    "training/measure/epilogue_labels.py": "pins a candidate in a compile and reads Inductor's fusion metrics",
    "training/measure/epilogue_ways.py": "compiles each way with Inductor's caches off",
    "training/measure/faithfulness.py": "the compile settings the faithfulness check runs under",
    "training/measure/retime.py": "labels as Inductor's kernels: its settings and caches for the retime",
}


def _touches_private_inductor(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch._inductor"):
            return True
        if isinstance(node, ast.Import) and any(a.name.startswith("torch._inductor") for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and ast.unparse(node).startswith("torch._inductor"):
            return True
    return False


def test_private_inductor_api_is_used_only_where_named():
    """Catches a selector module outside compat/ touching torch._inductor (an import or
    a `torch._inductor.` attribute), or a kernels/ or training/ module not in the allowlist; and
    an allowlist entry that no longer touches it (the list says what is true)."""
    touching = {str(p.relative_to(REPO)) for top in TOP for p in _sources(top) if _touches_private_inductor(p)}
    outside = sorted(p for p in touching if not p.startswith("selector/compat/") and p not in PRIVATE_INDUCTOR_ALLOWED)
    assert not outside, outside
    stale = sorted(p for p in PRIVATE_INDUCTOR_ALLOWED if p not in touching)
    assert not stale, stale


def test_every_module_docs_layout_names_exists():
    """docs/layout.md says where each kind of change goes: every `name.py` or `folder/` it names
    is there -- in a table row whose first cell is a folder, under that folder; elsewhere under
    the section's folder (kernels/, selector/, training/, tests/); a name that starts at the
    repository's root, from the root. Catches a renamed or moved module the map still sends
    people to."""
    import re

    text = (REPO / "docs" / "layout.md").read_text()
    section, missing = None, []
    for line in text.splitlines():
        heading = re.match(r"## (\w+)/", line)
        if heading:
            section = REPO / heading.group(1)
            continue
        if section is None:
            continue
        cells = [c.strip() for c in line.split("|")] if line.startswith("|") else []
        row = re.fullmatch(r"`([\w/]+/)`", cells[1]) if len(cells) > 2 else None
        base = section / row.group(1) if row else section
        for name in re.findall(r"`([\w./]+?)`", line):
            if not (name.endswith(".py") or re.fullmatch(r"[\w/]+/", name)):
                continue
            if name.split("/")[0] in ("kernels", "selector", "training", "tests", "docs", "reports"):
                where = REPO / name
            else:
                where = base / name
                if not where.exists() and (section / name).exists():
                    where = section / name
            if not where.exists():
                missing.append(str(where.relative_to(REPO)))
    assert not missing, missing


# -- one room per op kind: only its own module spells its name -----------------------------------
# the op kinds kselect decides, by the module that may spell their names (with ATen's underscored
# spelling); selector/ops/registry.py may name any, kernels/ (kernels/op_names.py) holds the
# spellings every lower floor reads
OP_NAME_OWNERS = {
    "selector/ops/mm.py": {"mm", "addmm", "bmm", "baddbmm"},
    "selector/ops/scaled_mm.py": {"scaled_mm", "_scaled_mm"},
    "selector/ops/grouped_mm.py": {"grouped_mm", "_grouped_mm"},
}
OP_NAME_FREE = {"selector/ops/registry.py"}
# "mm" and "bmm" are also the names of Inductor's Triton templates and of ATen's kernels (the
# candidate aten:mm): as such they stay where templates and kernels are meant
TEMPLATE_TOO = {"mm", "bmm"}
OP_READINGS = {"op", "op_name", "kind"}  # a name or attribute that holds an op's name


def _op_name(value) -> str | None:
    """The op kind a string constant names ("aten._scaled_mm.default" -> "_scaled_mm"), or None."""
    if not isinstance(value, str):
        return None
    name = value.removeprefix("aten.").removesuffix(".default")
    return name if any(name in names for names in OP_NAME_OWNERS.values()) else None


def _reads_op(node) -> bool:
    return (isinstance(node, ast.Name) and node.id in OP_READINGS) or (
        isinstance(node, ast.Attribute) and node.attr in OP_READINGS
    )


def _op_names_spelt(source: str) -> list[tuple[int, str]]:
    """(line, op name) for each string constant in `source` that names a decided op kind.

    Which strings count: a constant equal to an op kind's name or ATen's spelling of it ("addmm",
    "baddbmm", "scaled_mm", "_scaled_mm", "grouped_mm", "_grouped_mm"; with an "aten." prefix
    or ".default" suffix alike) counts wherever it stands -- a comparison, a table, a keyword, a
    feature block's or a candidate's name. A bare "mm" or "bmm" counts only where the code reads
    an op with it: compared (==, !=, in, not in) with a name or attribute `op`, `op_name` or
    `kind` (alone or in a literal so compared); passed as the keyword `op=`, `op_name=` or
    `kind=`; assigned to such a name; or in a literal (tuple, list, set, dict) that also holds a
    string counting wherever it stands. A docstring, a message or a regular expression that
    mentions an op inside longer text does not count: it decides nothing."""
    tree = ast.parse(source)
    found = set()

    def strings(node):
        if isinstance(node, ast.Constant):
            yield node
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for element in node.elts:
                yield from strings(element)
        elif isinstance(node, ast.Dict):
            for element in [*node.keys, *node.values]:
                if element is not None:
                    yield from strings(element)
        elif isinstance(node, ast.IfExp):  # op = "bmm" if ... else "mm"
            yield from strings(node.body)
            yield from strings(node.orelse)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                yield from strings(value)

    def note(constant, always_ok: bool):
        name = _op_name(constant.value)
        if name is not None and (always_ok or name not in TEMPLATE_TOO):
            found.add((constant.lineno, name))

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            note(node, always_ok=False)
        elif isinstance(node, ast.Compare) and any(_reads_op(x) for x in [node.left, *node.comparators]):
            for side in [node.left, *node.comparators]:
                for constant in strings(side):
                    note(constant, always_ok=True)
        elif isinstance(node, ast.keyword) and node.arg in OP_READINGS:
            for constant in strings(node.value):
                note(constant, always_ok=True)
        elif isinstance(node, ast.Assign) and any(_reads_op(t) for t in node.targets):
            for constant in strings(node.value):
                note(constant, always_ok=True)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            held = list(strings(node))
            if any(_op_name(c.value) not in (None, *TEMPLATE_TOO) for c in held):
                for constant in held:
                    note(constant, always_ok=True)
    return sorted(found)


def test_only_an_op_kinds_own_module_names_it():
    """Each op kind kselect decides is one module in selector/ops/ (registry.py lists them): no
    other selector file spells its name (see _op_names_spelt for which strings count). A lower
    floor that needs an op's name reads kernels/op_names.py or takes it from the op module
    through values passed down. Catches a hook, gate, pipeline, ranker, doctor or verify step
    that dispatches by comparing op-name strings rather than asking the op kind, and an op's
    name spelt again in compat/ or model/."""
    wrong = []
    for path in _sources("selector"):
        rel = str(path.relative_to(REPO))
        if rel in OP_NAME_FREE:
            continue
        own = OP_NAME_OWNERS.get(rel, set())
        wrong += [f"{rel}:{line}: {name!r}" for line, name in _op_names_spelt(path.read_text()) if name not in own]
    assert not wrong, wrong


def test_the_op_name_check_sees_each_way_an_op_is_named():
    """The check above finds an op name compared, tabled, passed and assigned, and leaves a
    Triton template's "mm" and a docstring alone."""
    source = (
        '"""A docstring about scaled_mm."""\n'
        'if problem.op == "bmm" or kind in ("mm",): pass\n'
        'OPS = {"mm": 1, "addmm": 2}\n'
        'Problem(op="mm")\n'
        'op = "bmm" if batched else "mm"\n'
        'make("aten", "_scaled_mm")\n'
        'op_name == "aten._grouped_mm.default"\n'
        'TEMPLATES = ("mm", "persistent_tma")\n'
        'if t == "mm": pass\n'
    )
    assert _op_names_spelt(source) == [
        (2, "bmm"),
        (2, "mm"),
        (3, "addmm"),
        (3, "mm"),
        (4, "mm"),
        (5, "bmm"),
        (5, "mm"),
        (6, "_scaled_mm"),
        (7, "_grouped_mm"),
    ]
