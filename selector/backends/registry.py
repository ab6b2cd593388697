"""The backends that join Inductor's GEMM choices through kselect, one line each, and
`BackendJoins`: every join of one Selector, asked as one (compat/template_configs.py's `join`).

A join has a `name`, the `ops` it joins (Inductor's op names at get_template_configs) and three
steps: `prepare()` at enable(), `templates(kernel_inputs, op_name)` (extra ExternKernelChoices
for the templates stage, ranked with every other backend) and `finalize(kept, stock)` (the
kept choices it can really build). Each must never break a compile: a failure is its own
warning and the other backends carry on.
"""

from __future__ import annotations

from kselect.selector.backends.flydsl import FlyDSLJoin

JOINS = (FlyDSLJoin,)


class BackendJoins:
    """One of each registered join, for one Selector."""

    def __init__(self, joins=JOINS):
        self._joins = {join.name: join() for join in joins}
        self.ops = frozenset(op for join in self._joins.values() for op in join.ops)

    def __getitem__(self, name: str):
        return self._joins[name]

    def prepare(self) -> None:
        for join in self._joins.values():
            join.prepare()

    def templates(self, kernel_inputs, op_name: str) -> list:
        return [
            t for join in self._joins.values() if op_name in join.ops for t in join.templates(kernel_inputs, op_name)
        ]

    def finalize(self, kept: list, stock: list) -> list:
        for join in self._joins.values():
            kept = join.finalize(kept, stock)
        return kept
