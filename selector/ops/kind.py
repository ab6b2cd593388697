"""`OpKind`: what the selector asks of an op kind it can decide, one subclass per op module.

The hook, the gate, the pipeline, the rankers, the doctor and verify ask these questions of the
op's `OpKind` (registry.py finds it), never by comparing op names themselves: adding an op kind
is one module in this room and one line in the registry.
"""

from __future__ import annotations

from typing import Callable, Sequence

from kselect.kernels.precision import gemm_dtype
from kselect.kernels.problem import TORCH_DTYPE_NAMES

TEMPLATES, CHOICES = "templates", "choices"  # the two hook points (selector/inductor/hook.py)


class OpKind:
    """One op kind. The class attributes say what it is; the methods read it from Inductor's
    nodes (through compat/) and map its choices to candidates."""

    name: str = ""  # the kind: a Problem's `op`, a sidecar's `ops`, the gate's INFO lines
    lowering_names: Sequence[str] = ()  # other names Inductor gives it at get_template_configs
    extern_names: Sequence[str] = ()  # ExternKernelChoice names its lowering builds
    template_names: Sequence[str] = ()  # Triton templates built outside get_template_configs (never stamped)
    stages: Sequence[str] = (TEMPLATES, CHOICES)  # the hook points that decide it
    held_only = False  # decided only where the serving model says it holds it (else: any model)
    feature_block: str | None = None  # the optional feature block a model needs to rank it
    verify_times_itself = True  # verify's own harness can time its kept set (else Inductor's benchmark)
    reads_epilogue = True  # ranked with its epilogue (the fusing few, time_fused, the epilogue block)
    compile_priced = True  # verify prices its kept templates' compiles (compile-cost model)
    early_decided = True  # kselect enumerates its space before Inductor generates it
    warm_templates: Sequence[str] = ()  # the Triton templates a ranker's warm-up ranks (none: not warmed)

    def unheld(self, holdings: Callable[[], object], nodes) -> str | None:
        """What of this op (its input nodes) kselect leaves to stock ("fp16 mm", "rowwise
        scaled_mm", ...), or None where it decides it. `holdings()`: what the serving model
        holds (`ops`, `dtypes`, `scalings`, `grouped`; None: no model), asked only if needed."""
        raise NotImplementedError

    def decided_as(self, ranker) -> str | None:
        """How `kselect doctor` lists this op as decided with `ranker`, or None where it is not."""
        if self.held_only and self.name not in set(getattr(ranker, "ops", None) or ()):
            return None
        return self.name

    def ktc_signature(self, kernel_inputs, op_name: str, ktcs):
        """Templates stage: (Problem, fields, device) of the GEMM Inductor is lowering."""
        raise NotImplementedError

    def ktc_candidates(self, ktcs) -> list:
        """Templates stage: each KTC as a Candidate (None where it has no mapping)."""
        raise NotImplementedError

    def choices_signature(self, choices):
        """Choices stage: (Problem, fields, device) read from the ChoiceCallers' input nodes."""
        raise NotImplementedError

    def caller_candidates(self, choices) -> list:
        """Choices stage: each ChoiceCaller as a Candidate (None where it has no mapping)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<op kind {self.name}>"


def dtype_name(dtype) -> str:
    """kselect's name of a torch dtype ("bf16"), or torch's own where kselect has none."""
    name = str(dtype).replace("torch.", "")
    return TORCH_DTYPE_NAMES.get(name, name)


def gemm_dtype_name(dtype, device):
    """kselect's name for an input's dtype ("tf32" for fp32 on CUDA in TF32), or the dtype as
    torch names it where kselect has no name for it (int8, fp8: never modelled)."""
    try:
        return gemm_dtype(dtype, device)
    except ValueError:
        return dtype
