"""A GEMM with its epilogue: what follows the GEMM in the graph Inductor lowers, and which
choices can absorb it.

Why: kselect ranks and times bare GEMMs, but Inductor fuses a GEMM's pointwise epilogue (bias,
GELU/SiLU, SwiGLU's product, a residual add, a cast) into a template's store -- a Triton
template on GPUs, the C++ GEMM template on the CPU -- never into an ATen (cuBLAS, MKL) call,
which then needs a separate kernel that re-reads the GEMM's output. A bare-GEMM winner can
lose the step (reports/2026-12-02-e2e-h200: ATen won each bare decode GEMM by ~3 %, stock
DEFAULT's fused templates won the step by 1.16x).

`Epilogue` is read from the FX graph Inductor is lowering (compat/current_graph.py's
`current_epilogue`); with the `epilogue_fusion` option, a GEMM whose epilogue a template can
fuse is handed to Inductor as kselect's few (ATen + the best templates), so Inductor's own
epilogue-fusion benchmark picks among them (decide/policy.py's `with_fusing_few`).
"""

from __future__ import annotations

import dataclasses

from kselect.kernels.candidate import Candidate

# What each epilogue op does, as few kinds as the features need (compat/current_graph.py
# classifies aten ops into them): an activation (gelu's erf/tanh, silu's sigmoid, relu),
# a product or sum with another tensor (SwiGLU's gate, a bias or residual), arithmetic with
# constants or among the epilogue's own values, a dtype cast, any other pointwise op.
OP_KINDS = ("activation", "mul_tensor", "add_tensor", "arith", "cast", "other")


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """The pointwise ops that follow one GEMM, read from the FX graph.

    `ops`: their aten names in graph order; `kinds`: how many of each OP_KINDS kind;
    `extra_inputs` / `extra_bytes`: the other tensors they read (a bias, a residual, the other
    half of SwiGLU) and their bytes; `out_bytes`: what the epilogue writes (its values used
    after it); `gemm_out_bytes`: the GEMM's own output; `gemm_output_escapes`: that output is
    used outside the epilogue too, so it is written whatever fuses; `fusable`: a template
    can fuse the epilogue into its store (each op reads the GEMM's output element by element,
    through order-keeping views only). Byte counts are None for a symbolic size."""

    ops: tuple[str, ...] = ()
    kinds: tuple[tuple[str, int], ...] = ()
    extra_inputs: int = 0
    extra_bytes: int | None = 0
    out_bytes: int | None = 0
    gemm_out_bytes: int | None = 0
    gemm_output_escapes: bool = False
    fusable: bool = False

    def kind_count(self, kind: str) -> int:
        if kind not in OP_KINDS:
            raise ValueError(f"unknown epilogue op kind {kind!r}; one of {OP_KINDS}")
        return dict(self.kinds).get(kind, 0)

    def as_dict(self) -> dict:
        """JSON-ready (a decision record, a dataset row's epilogue columns)."""
        return {**dataclasses.asdict(self), "ops": list(self.ops), "kinds": dict(self.kinds)}


NO_EPILOGUE = Epilogue()

# backends whose GEMM template stores its own tile, so Inductor's scheduler can fuse an
# epilogue into it: Triton's mm / persistent-TMA templates (decompose-k ends in a reduction,
# extern calls in a library) and the CPU's C++ GEMM template (its choices map to backend "cpp")
_FUSING_TRITON_TEMPLATES = ("mm", "persistent_tma")


def fuses_epilogue(c: Candidate | None) -> bool:
    """Choices Inductor can fuse a pointwise epilogue into."""
    if c is None:
        return False
    return (c.backend == "triton" and c.template in _FUSING_TRITON_TEMPLATES) or c.backend == "cpp"
