"""The op-kind registry (selector/ops/registry.py) is consistent with what the lower floors
know: every op a Problem can carry has its op kind, and each kind's declared facts name things
that exist."""

from kselect.kernels import op_names
from kselect.kernels.grouped.problem import OP as GROUPED_OP
from kselect.kernels.problem import OPS
from kselect.selector.model.feature_blocks import FEATURE_BLOCKS
from kselect.selector.ops import registry
from kselect.selector.ops.kind import CHOICES, TEMPLATES


def test_every_problem_op_has_its_op_kind():
    """Catches a Problem op (kernels/problem.py OPS, the grouped GEMM's OP) with no module: the
    pipeline, rankers and verify ask its op kind and would fail on it."""
    for op in (*OPS, GROUPED_OP):
        assert registry.get(op) is not None and registry.get(op).name == op


def test_each_op_kinds_facts_name_what_exists():
    """Catches a feature block no model can declare, a stage that is neither hook point, and
    two kinds claiming one Inductor name (the gate would read one op as the other)."""
    seen = {}
    for kind in registry.KINDS.values():
        assert kind.feature_block is None or kind.feature_block in FEATURE_BLOCKS, kind
        assert kind.stages and set(kind.stages) <= {TEMPLATES, CHOICES}, kind
        for name in (*kind.extern_names, *kind.template_names, *kind.lowering_names):
            assert seen.setdefault(name, kind) is kind, (name, kind, seen[name])
    assert registry.get(op_names.SCALED_MM).feature_block == op_names.SCALED_MM


def test_an_op_without_a_module_is_undecided():
    """An op no module claims has no kind: the gate leaves it to stock (tests/selector/test_op_kinds.py)."""
    assert all(registry.get(name) is None for name in ("int_mm", "mm_plus_mm", "scaled_grouped_mm", "conv"))
