"""Named GEMM + epilogue functions for the epilogue labels (training/measure/epilogue_labels.py).

Each case is one Linear-like GEMM (x @ W^T, layout "nt") followed by a pointwise epilogue of the
kinds a transformer layer has (kernels/epilogue.py's OP_KINDS): an activation times
another tensor (a gated MLP's product), a bias and GELU (addmm + activation), SiLU times the
up projection (SwiGLU's gate, the other half an input), a residual add. Sizes are the Linear
layers of Llama-3-8B (training/workloads/shapes.py's config) at decode to prefill token counts.
Everything is deterministic; operands are seeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kselect.kernels.problem import Problem


def relu_mul(x, w, r):
    import torch

    return torch.relu(x @ w.t()) * r


def bias_gelu(x, w, b):
    import torch

    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b))


def silu_mul(x, w, up):
    import torch

    return torch.nn.functional.silu(x @ w.t()) * up


def residual_add(x, w, r):
    return x @ w.t() + r


# kind -> (function, the third operand's shape from (M, N): a full output or a bias row)
KINDS: dict[str, tuple[Callable, Callable]] = {
    "relu-mul": (relu_mul, lambda m, n: (m, n)),
    "bias-gelu": (bias_gelu, lambda m, n: (n,)),
    "silu-mul": (silu_mul, lambda m, n: (m, n)),
    "residual-add": (residual_add, lambda m, n: (m, n)),
}
# Llama-3-8B's Linear layers (N = out, K = in): attention out, the MLP's gate/up and down, qkv
LLAMA3_8B_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096))
TOKENS = (8, 64, 512, 2048, 8192)  # decode to a one-layer prefill of 8 x 1024 tokens
SETS = ("llama3-8b", "smoke")


class EpilogueCaseError(ValueError):
    """An epilogue case that cannot be built; the message names it."""


@dataclass(frozen=True)
class EpilogueCase:
    """One GEMM + epilogue: its kind (KINDS) and sizes; `name` identifies it in the labels file."""

    kind: str
    M: int
    N: int
    K: int
    dtype: str = "bf16"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise EpilogueCaseError(f"unknown epilogue kind {self.kind!r}: expected one of {sorted(KINDS)}")
        self.problem()  # sizes and dtype checked by Problem

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.M}x{self.N}x{self.K}:{self.dtype}"

    @property
    def function(self) -> Callable:
        return KINDS[self.kind][0]

    def problem(self) -> Problem:
        """The GEMM Inductor lowers (a bias makes it addmm)."""
        return Problem(self.M, self.N, self.K, self.dtype, "nt", "addmm" if self.kind == "bias-gelu" else "mm")

    def operands(self, device: str, seed: int = 0) -> tuple:
        """x (M x K), W (N x K) and the epilogue's operand, scaled so the output stays O(1)."""
        import torch

        from kselect.kernels.operands import torch_dtype

        g = torch.Generator(device=device).manual_seed(seed)
        dtype = torch_dtype(self.problem())

        def make(*shape, scale=1.0):
            return (torch.randn(*shape, generator=g, device=device) * scale).to(dtype)

        third = KINDS[self.kind][1](self.M, self.N)
        return make(self.M, self.K), make(self.N, self.K, scale=self.K**-0.5), make(*third)


def epilogue_cases(name: str) -> list[EpilogueCase]:
    """A named set: "llama3-8b" (every kind on every Llama-3-8B Linear at TOKENS rows, 80 cases),
    "smoke" (one small fp32 case per kind, for the CPU)."""
    if name == "llama3-8b":
        return [EpilogueCase(k, m, n, kk) for k in KINDS for n, kk in LLAMA3_8B_NK for m in TOKENS]
    if name == "smoke":
        return [EpilogueCase(k, 64, 80, 96, "fp32") for k in KINDS]
    raise EpilogueCaseError(f"unknown epilogue set {name!r}: expected one of {SETS}")
