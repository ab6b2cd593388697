"""`_grouped_mm`, the MoE expert GEMM: decided only where the serving ranker holds it (a grouped
model joined to it, selector/decide/grouped_ranker.py) in its dtype. Its lowering never asks
get_template_configs, so only the choices stage decides it; it is ranked bare (no epilogue
block, no compile price), and its kept few are timed by Inductor's benchmark on its own
offsets (kselect's harness builds a plain GEMM's operands)."""

from __future__ import annotations

from kselect.kernels import op_names
from kselect.selector.compat import choice_candidates, signatures
from kselect.selector.model.held_ops import DEFAULT_OPS  # a ranker that names no `ops` holds these
from kselect.selector.ops.kind import CHOICES, OpKind, dtype_name
from kselect.selector.unavailable import RankerUnavailable


class GroupedMm(OpKind):
    name = op_names.GROUPED_MM
    extern_names = (op_names.ATEN_GROUPED_MM,)
    template_names = (op_names.GROUPED_MM,)  # Inductor's Triton template of the same name
    stages = (CHOICES,)
    held_only = True
    verify_times_itself = False
    reads_epilogue = False
    compile_priced = False  # the compile-cost model knows mm's templates, not the grouped one
    early_decided = False

    def unheld(self, holdings, nodes) -> str | None:
        """What of this `_grouped_mm` the ranker does not hold ("grouped_mm", "fp16
        grouped_mm"), or None where it decides it. No ranker (None): stock."""
        ranker = holdings()
        if ranker is None or self.name not in (getattr(ranker, "ops", None) or DEFAULT_OPS):
            return self.name
        known = getattr(getattr(ranker, "grouped", None) or ranker, "dtypes", None)
        dtype = dtype_name(nodes[0].get_dtype())
        if known is not None and dtype not in known:
            return f"{dtype} {self.name}"
        return None

    def choices_signature(self, choices):
        """choices_grouped_signature, refusing what the grouped model cannot decide: a dynamic
        size (its routing and tiles change with every size; RankerUnavailable -> stock, one warning)."""
        problem, fields, device = signatures.choices_grouped_signature(choices)
        if fields.get("dynamic"):
            raise RankerUnavailable(
                "grouped-dynamic", f"kselect: a grouped GEMM of dynamic {fields['dynamic']} is not modelled -- stock"
            )
        return problem, fields, device

    def caller_candidates(self, choices) -> list:
        return choice_candidates.grouped_caller_candidates(choices)


GROUPED_MM = GroupedMm()
