"""Two transformer MLP blocks as training workloads, at training M (batch x seq tokens):

- `gpt2-mlp`: GPT-2's MLP, c_fc -> GELU (tanh) -> c_proj, both with bias, so each projection
  is an addmm whose epilogue is the bias (and, for c_fc, the GELU); GPT-2 XL's widths
  (hidden 1600, MLP 6400), the largest GPT-2;
- `swiglu-mlp`: the gated MLP of Llama/Mistral/Qwen as Hugging Face writes it (separate
  gate_proj and up_proj, no bias), down(silu(gate(x)) * up(x)); Llama-3-8B's widths (4096,
  14336).

Each step: y = x + mlp(x) over `batch x seq` random rows, loss = mean squared error to a
random target, backward, AdamW. Weights are seeded and random; nothing is downloaded."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from kselect.training.bench.e2e_cases import TrainCase


@dataclass(frozen=True)
class MlpShape:
    hidden: int
    intermediate: int
    note: str


SHAPES = {
    "gpt2-mlp": MlpShape(1600, 6400, "GPT-2 XL's MLP (c_fc 1600->6400 + bias, GELU tanh, c_proj + bias)"),
    "swiglu-mlp": MlpShape(4096, 14336, "Llama-3-8B's SwiGLU MLP (gate/up 4096->14336, down, no bias)"),
}
TINY = {"gpt2-mlp": MlpShape(32, 128, "CPU tests"), "swiglu-mlp": MlpShape(32, 96, "CPU tests")}


class Gpt2Mlp(nn.Module):
    def __init__(self, shape: MlpShape):
        super().__init__()
        self.c_fc = nn.Linear(shape.hidden, shape.intermediate)
        self.c_proj = nn.Linear(shape.intermediate, shape.hidden)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class SwigluMlp(nn.Module):
    def __init__(self, shape: MlpShape):
        super().__init__()
        self.gate_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.up_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.down_proj = nn.Linear(shape.intermediate, shape.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


MODULES = {"gpt2-mlp": Gpt2Mlp, "swiglu-mlp": SwigluMlp}


def build(name: str, spec: dict, device, dtype, tiny: bool = False):
    """(module, training case, note) of one MLP at M = batch x seq rows."""
    shape = (TINY if tiny else SHAPES)[name]
    module = new_module(name, shape, spec, device, dtype)
    case = train_case(module, shape, spec, device, dtype)
    return module, case, f"{shape.note}, M = {case.tokens_per_step}"


def new_module(name: str, shape: MlpShape, spec: dict, device, dtype):
    """The MLP `name` at `shape`, its weights seeded by spec's seed."""
    torch.manual_seed(spec["seed"])
    with torch.device(device):
        module = MODULES[name](shape)
    return module.to(dtype=dtype)


def train_case(module, shape: MlpShape, spec: dict, device, dtype, fp32_module=None) -> TrainCase:
    """y = x + module(x) over batch x seq seeded random rows, MSE to a random target."""
    gen = torch.Generator().manual_seed(spec["seed"] + 1000)
    rows = spec["batch"] * spec["seq"]
    x = torch.randn(rows, shape.hidden, generator=gen).to(device=device, dtype=dtype)
    target = torch.randn(rows, shape.hidden, generator=gen).to(device=device, dtype=dtype)

    def loss_of(m):
        w = next(m.parameters())  # the fp32 copy runs on fp32 copies of the inputs
        return lambda a, b: F.mse_loss((a.to(w.dtype) + m(a.to(w.dtype))).float(), b.float())

    return TrainCase(module, loss_of, (x, target), rows, fp32_module=fp32_module)
