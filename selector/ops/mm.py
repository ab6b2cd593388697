"""The dense GEMMs: mm, addmm, bmm and baddbmm (ranked as a bmm), and on the CPU a frozen
Linear's (MKL's or oneDNN's, read as an mm or addmm), in bf16, fp16 and TF32 (or any dtype the
serving ranker has data for). Any model decides them; a dtype it lacks goes to stock."""

from __future__ import annotations

from kselect.kernels import op_names
from kselect.kernels.problem import DTYPE_BYTES
from kselect.selector.compat import choice_candidates, signatures
from kselect.selector.ops.kind import OpKind, dtype_name, gemm_dtype_name

_TILE_TEMPLATES = ("mm", "persistent_tma")  # the Triton templates of a dense GEMM's space


class DenseGemm(OpKind):
    """A dense GEMM kind: its own name and Inductor's names of its lowering."""

    def __init__(self, name: str, extern_names=(), lowering_names=(), warm_templates=_TILE_TEMPLATES):
        self.name = name
        self.extern_names = tuple(extern_names)
        self.lowering_names = tuple(lowering_names)
        self.warm_templates = tuple(warm_templates)

    def unheld(self, holdings, nodes) -> str | None:
        try:
            dtypes = [gemm_dtype_name(n.get_dtype(), n.get_device()) for n in nodes]
        except (AttributeError, NotImplementedError):  # an input without a dtype: read as before
            dtypes = []
        return self.unheld_dtypes(dtypes, lambda: getattr(holdings(), "dtypes", None))

    def unheld_dtypes(self, dtypes, ranker_dtypes) -> str | None:
        """What kselect leaves to stock ("fp16 mm", "int8 mm"), or None where it decides it.
        `dtypes`: the op's input dtypes (none read: decided as before); `ranker_dtypes()`: those
        the ranker has data for (None: any), asked only where the inputs' dtype is one kselect knows."""
        names = sorted({dtype_name(d) for d in dtypes})
        if not names:
            return None
        if len(names) > 1 or names[0] not in DTYPE_BYTES:
            return f"{'/'.join(names)} {self.name}"
        known = ranker_dtypes()
        if known is not None and names[0] not in known:
            return f"{names[0]} {self.name}"
        return None

    def decided_as(self, ranker) -> str | None:
        return None if self is LINEAR else self.name  # a frozen Linear is listed as the mm it is

    def ktc_signature(self, kernel_inputs, op_name: str, ktcs):
        return signatures.ktc_signature(kernel_inputs, op_name)

    def ktc_candidates(self, ktcs) -> list:
        return choice_candidates.ktc_candidates(ktcs)

    def choices_signature(self, choices):
        return signatures.choices_signature(choices)

    def caller_candidates(self, choices) -> list:
        return choice_candidates.caller_candidates(choices)


MM = DenseGemm(
    op_names.MM, extern_names=("mm", "mm_dtype"), lowering_names=("mm-ah",)
)  # mm-ah: tuned_mm's AutoHeuristic call
ADDMM = DenseGemm(op_names.ADDMM, extern_names=("addmm", "bias_addmm"))
BMM = DenseGemm(op_names.BMM, extern_names=("bmm", "bmm_dtype"), warm_templates=("mm",))  # no persistent template
BADDBMM = DenseGemm(op_names.BADDBMM, extern_names=("baddbmm",), warm_templates=("mm",))
# a frozen fp32 Linear on the CPU: x @ W^T, its bias added apart (oneDNN's `_linear_pointwise`
# is read in naming.py: with a fused activation it is no bare GEMM)
LINEAR = DenseGemm(op_names.LINEAR, extern_names=("_mkl_linear",))
KINDS = (MM, ADDMM, BMM, BADDBMM, LINEAR)
