"""What one bench workload runs, whatever model it comes from: a training case (a module, its
loss, its inputs, how its user compiles it) or an inference case (the step users compile and
its inputs). The worker (e2e_worker.py) checks, compiles and times a case; the Llama of
llama.py and the real model definitions of real_models.py each build theirs."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class TrainCase:
    """One training step: forward + loss compiled, backward through the compiled graph, eager
    AdamW. `loss_of(module)` is the eager loss over `inputs` (also called on an fp32 copy);
    `compile(compile_fn, module, loss)` gives the compiled loss the user's own way (None:
    `compile_fn(loss)`; torchtitan compiles each block in place instead). `fp32_module()` gives
    the high-precision module whose loss and gradients anchor the check, its parameters in
    `module`'s order (None: an fp32 copy of a half-precision `module`; a quantized model's is
    its unquantized self)."""

    module: Any
    loss_of: Callable
    inputs: tuple
    tokens_per_step: int
    compile: Callable | None = None
    fp32_module: Callable | None = None


@dataclass
class InferenceCase:
    """One inference step `fn(*inputs)` (prefill or decode); `fp32_reference()`, where the
    model is half precision, gives the same step's output on an fp32 copy of the weights."""

    fn: Callable
    inputs: tuple
    tokens_per_step: int
    fp32_reference: Callable | None = None


def tokens(spec: dict, vocab: int, length: int, device, offset: int = 0):
    """(batch, length) seeded token ids: the same in every variant's process."""
    import torch

    gen = torch.Generator().manual_seed(spec["seed"] + 1000 + offset)
    return torch.randint(0, vocab, (spec["batch"], length), generator=gen).to(device)


def fp32_copy(module):
    """An fp32 copy of a half-precision module (the same, rounded, weights), else None."""
    import torch

    if next(module.parameters()).dtype not in (torch.bfloat16, torch.float16):
        return None
    return copy.deepcopy(module).float()


def n_params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def llama_train(model, spec: dict) -> TrainCase:
    """Next-token cross-entropy over `seq` random tokens (training/bench/llama.py's model)."""
    import torch.nn.functional as F

    device = model.embed.weight.device
    inputs = (
        tokens(spec, model.cfg.vocab, spec["seq"], device),
        tokens(spec, model.cfg.vocab, spec["seq"], device, offset=1),
    )

    def loss_of(m):
        return lambda t, y: F.cross_entropy(m(t).flatten(0, 1).float(), y.flatten())

    return TrainCase(model, loss_of, inputs, spec["batch"] * spec["seq"])


def llama_prefill(model, spec: dict) -> InferenceCase:
    """A prompt of `seq` tokens into a static KV cache; logits of the last position."""
    caches = model.new_caches(spec["batch"], spec["seq"] + 1)
    prompt = tokens(spec, model.cfg.vocab, spec["seq"], model.embed.weight.device)
    return _llama_inference(model, caches, prompt, 0, spec["batch"] * spec["seq"])


def llama_decode(model, spec: dict) -> InferenceCase:
    """One new token per sequence at position `seq`, over the prompt's cached keys. The prompt
    is prefilled eagerly (untimed); every timed step rewrites the same slot."""
    import torch

    device = model.embed.weight.device
    caches = model.new_caches(spec["batch"], spec["seq"] + 1)
    with torch.no_grad():
        model(tokens(spec, model.cfg.vocab, spec["seq"], device), caches, 0, last_only=True)
    nxt = tokens(spec, model.cfg.vocab, 1, device, offset=2)
    return _llama_inference(model, caches, nxt, spec["seq"], spec["batch"])


def _llama_inference(model, caches, toks, pos: int, tokens_per_step: int) -> InferenceCase:
    def fn(t, c):
        return model(t, c, pos, last_only=True)

    def fp32_reference():
        model32 = fp32_copy(model)
        if model32 is None:
            return None
        caches32 = [(k.float(), v.float()) for k, v in caches]  # fp32 copies of the same caches
        return model32(toks, caches32, pos, last_only=True)

    return InferenceCase(fn, (toks, caches), tokens_per_step, fp32_reference)


LLAMA_CASES = {"train": llama_train, "prefill": llama_prefill, "decode": llama_decode}
