"""fp8 `_scaled_mm` (rowwise or tensorwise scales, e4m3 operands, no bias): decided only where
the serving ranker holds it (its `ops` and `scalings`, selector/model/held_ops.py; a
MeasuredRanker's from its table's problems) in that scaling kind; read by its own signature
and candidate mapping (its scaled templates), ranked with the "scaled_mm" feature block."""

from __future__ import annotations

from kselect.kernels import op_names
from kselect.kernels.problem import FP8_DTYPES
from kselect.selector.compat import choice_candidates, signatures
from kselect.selector.model.held_ops import DEFAULT_OPS  # a ranker that names no `ops` holds these
from kselect.selector.ops.kind import OpKind, dtype_name


class ScaledMm(OpKind):
    name = op_names.SCALED_MM
    extern_names = (op_names.ATEN_SCALED_MM,)
    template_names = ("scaled_mm_device_tma_epilogue_scaling", "scaled_mm_device_tma_main_loop_scaling")
    held_only = True
    feature_block = op_names.SCALED_MM  # fp8 scaled_mm's problem columns (model/scaled_features.py)
    early_decided = False  # kselect enumerates bf16 GEMMs' spaces; scaled_mm is decided over Inductor's

    def unheld(self, holdings, nodes) -> str | None:
        """What of this `_scaled_mm` the ranker does not hold ("scaled_mm", "rowwise
        scaled_mm", "scaled_mm with a bias", ...), or None where it decides it. No ranker
        (None): stock, as for every unheld op."""
        ranker = holdings()
        if ranker is None or self.name not in (getattr(ranker, "ops", None) or DEFAULT_OPS):
            return self.name
        if len(nodes) != 4:
            return f"{self.name} with a bias"
        operands = sorted({dtype_name(n.get_dtype()) for n in nodes[:2]})
        if len(operands) != 1 or operands[0] not in FP8_DTYPES:
            # e5m2 (torchao's tensorwise backward casts the output gradient to it) or mixed fp8: no
            # kselect Problem describes it, whatever the ranker holds
            return f"{'/'.join(operands)} {self.name}"
        dtype = operands[0]
        known = getattr(ranker, "dtypes", None)
        if known is not None and dtype not in known:
            return f"{dtype} {self.name}"
        sizes = [[signatures.size_hint(s) for s in n.get_size()] for n in nodes]
        try:
            scaling = signatures.scaled_scaling(*sizes)
        except ValueError:
            return f"{self.name} of blockwise or MX scales"
        if scaling not in (getattr(ranker, "scalings", None) or ()):
            return f"{scaling} {self.name}"
        return None

    def decided_as(self, ranker) -> str | None:
        if self.name not in set(getattr(ranker, "ops", None) or ()):
            return None
        scalings = sorted(getattr(ranker, "scalings", None) or ())
        return f"{self.name} ({', '.join(scalings)})" if scalings else self.name

    def ktc_signature(self, kernel_inputs, op_name: str, ktcs):
        return signatures.scaled_mm_signature(kernel_inputs, choice_candidates.scaled_fast_accum(ktcs))

    def ktc_candidates(self, ktcs) -> list:
        return choice_candidates.scaled_ktc_candidates(ktcs)

    def choices_signature(self, choices):
        return signatures.choices_scaled_signature(choices, choice_candidates.scaled_fast_accum(choices))

    def caller_candidates(self, choices) -> list:
        return choice_candidates.scaled_caller_candidates(choices)


SCALED_MM = ScaledMm()
