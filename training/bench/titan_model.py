"""torchtitan's Llama-3 training step as torchtitan runs it: its own model definition (with its
FlexAttention and document masks), its own init, its cross-entropy loss (sum over tokens,
divided by the token count as its trainer does) and its compile option: `apply_compile`
compiles every TransformerBlock on its own (fullgraph), and the loss is compiled as
`--compile.components loss` does. kselect is then enabled only by the environment
(`KSELECT_MODE`, read at `import torch`); the bench's supervisor sets it for this model's
kselect variants (real_models.selector_env).

Two torchtitan model APIs, told apart by what the installed torchtitan provides: 0.3's
configs (`llama3_configs`, `cfg.build()`, `init_states`; needs torch >= 2.12) and 0.2's model
args (`llama3_args`, `Transformer(args)`, `init_weights`; the release that imports on the GPU
image's torch 2.11). docs/e2e.md says which runs where.

`titan-llama3-8b-2l`: two of Llama-3-8B's 32 layers; `titan-llama3-tiny`: two of torchtitan's
debug model's layers (the CPU tests). FlexAttention has no backward on a CPU, so the tiny
model's blocks attend through torchtitan's own causal scaled-dot-product attention instead
(one document per sequence: the same attention)."""

from __future__ import annotations

import dataclasses
import functools
from types import SimpleNamespace

from kselect.training.bench.e2e_cases import TrainCase

FLAVORS = {  # name -> (0.3 flavor, 0.2 flavor, layers kept, FlexAttention kept, note)
    "titan-llama3-8b-2l": ("8B", "8B_flex", 2, True, "Llama-3-8B config, 2 of 32 layers, FlexAttention"),
    "titan-llama3-tiny": ("debugmodel", "debugmodel", 2, False, "debugmodel config, 2 of 6 layers, causal SDPA"),
}


class ConfigsAPI:
    """torchtitan 0.3: Decoder configs built by `.build()`, masks from positions (a document
    starts where its positions restart), `model(tokens, positions, masks)`."""

    def build_model(self, name: str, device, seed: int):
        import torch
        from torchtitan.models.llama3 import llama3_configs

        flavor, _, layers, flex, _ = FLAVORS[name]
        cfg = llama3_configs[flavor](attn_backend="flex")
        cfg.layers = cfg.layers[:layers]
        if not flex:
            from torchtitan.models.common.attention import ScaledDotProductAttention

            for layer in cfg.layers:
                layer.attention.inner_attention = ScaledDotProductAttention.Config()
        torch.manual_seed(seed)
        with torch.device(device):
            model = cfg.build()
            model.init_states(buffer_device=torch.device(device))
        return model

    def vocab_size(self, model) -> int:
        return model.config.vocab_size

    def forward(self, model, tokens, positions):
        from torchtitan.models.common.attention import FlexAttention

        flex = isinstance(model.config.first_attention.inner_attention, FlexAttention.Config)
        masks = model.get_attention_masks(positions) if flex else None
        return model(tokens, positions, masks)

    def apply_compile(self, module):
        """Its apply_compile on a one-device ParallelDims; returns the loss's compile backend."""
        from torchtitan.config import CompileConfig
        from torchtitan.distributed import ParallelDims
        from torchtitan.distributed.compile import apply_compile

        config = CompileConfig(enable=True)
        dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=1, pp=1, ep=1, world_size=1)
        apply_compile(module, compile_config=config, parallel_dims=dims)
        return config.backend


class ArgsAPI:
    """torchtitan 0.2: `Transformer(TransformerModelArgs)`, its flex flavors' block-causal masks
    from the tokens (a document ends at the tokenizer's eos id), `model(tokens, masks)` with no
    positions, as its trainer calls it on text data."""

    def build_model(self, name: str, device, seed: int):
        import torch
        from torchtitan.models.llama3 import Transformer, llama3_args

        _, flavor, layers, _, _ = FLAVORS[name]
        args = dataclasses.replace(llama3_args[flavor], n_layers=layers)
        torch.manual_seed(seed)
        with torch.device(device):
            model = Transformer(args)
        with torch.no_grad():  # as its trainer calls it (its init copies into the parameters)
            model.init_weights(buffer_device=torch.device(device))
        return model

    def vocab_size(self, model) -> int:
        return model.model_args.vocab_size

    def forward(self, model, tokens, positions):
        masks = None
        if model.model_args.attn_type == "flex":
            # its trainer passes its tokenizer, of which the masks read eos_id alone; an id
            # outside the vocabulary ends no document early: one document per sequence, as
            # the 0.3 masks from restart-free positions give
            no_eos = SimpleNamespace(eos_id=model.model_args.vocab_size)
            masks = model.get_attention_masks(input_batch=tokens, tokenizer=no_eos)
        return model(tokens, attention_masks=masks)

    def apply_compile(self, module):
        """Its apply_compile with its job config's Compile section; returns the loss's backend."""
        from torchtitan.config.job_config import Compile
        from torchtitan.models.llama3.infra.parallelize import apply_compile

        config = Compile(enable=True)
        apply_compile(module, config)
        return config.backend


def titan_api():
    """The model API of the installed torchtitan; an ImportError naming the release for this
    torch when its model package does not import (0.3.0 needs torch >= 2.12)."""
    import torch
    import torchtitan

    try:
        import torchtitan.models.llama3 as llama3
    except ImportError as exc:
        raise ImportError(
            f"torchtitan {torchtitan.__version__}'s Llama-3 does not import on torch {torch.__version__} "
            f"({exc}); torch 2.11 runs torchtitan 0.2.2, torch >= 2.12 runs 0.3.0 (docs/e2e.md)"
        ) from exc

    if hasattr(llama3, "llama3_configs"):
        return ConfigsAPI()
    if hasattr(llama3, "llama3_args"):
        return ArgsAPI()
    raise ImportError(
        f"torchtitan at {llama3.__file__} has neither llama3_configs (0.3) nor llama3_args (0.2); "
        "install torchtitan 0.3.0 (torch >= 2.12) or 0.2.2 (torch 2.11)"
    )


def build_model(name: str, device, dtype, seed: int, api):
    """torchtitan's Llama-3 of the flavor, layers cut, initialised by its own init (`api`:
    titan_api())."""
    model = api.build_model(name, device, seed)
    # floating tensors only: Module.to(dtype) would also cast the complex RoPE table to real
    return model._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)


def compile_as_titan(compile_fn, module, loss):
    """torchtitan's compile option (`--compile.enable`, components model and loss): every
    block compiled in place by its apply_compile, the loss function by torch.compile. The
    bench's compile_fn (the variant's torch.compile) is not used: the variant's Inductor
    settings are global and kselect comes from the environment."""
    import torch

    backend = loss.api.apply_compile(module)
    return loss.with_compiled_loss(torch.compile(loss.cross_entropy, backend=backend))


class TitanLoss:
    """model -> logits -> torchtitan's cross_entropy_loss (a sum) / tokens."""

    def __init__(self, model, api, cross_entropy=None):
        from torchtitan.components.loss import cross_entropy_loss

        self.model = model
        self.api = api
        self.cross_entropy = cross_entropy_loss
        self.ce = cross_entropy or cross_entropy_loss

    def with_compiled_loss(self, ce):
        return TitanLoss(self.model, self.api, ce)

    def __call__(self, tokens, labels, positions):
        pred = self.api.forward(self.model, tokens, positions)
        return self.ce(pred, labels) / labels.numel()


def build(name: str, spec: dict, device, dtype):
    """(model, training case, note)."""
    import torch
    import torchtitan

    from kselect.training.bench.e2e_cases import tokens

    api = titan_api()
    model = build_model(name, device, dtype, spec["seed"], api)
    vocab, seq = api.vocab_size(model), spec["seq"]
    positions = torch.arange(seq, device=device).expand(spec["batch"], seq).contiguous()
    inputs = (tokens(spec, vocab, seq, device), tokens(spec, vocab, seq, device, offset=1), positions)
    loss_of = functools.partial(TitanLoss, api=api)  # the one API, for the model and its fp32 copy
    case = TrainCase(model, loss_of, inputs, spec["batch"] * seq, compile=compile_as_titan)
    return model, case, f"torchtitan {torchtitan.__version__}, its {FLAVORS[name][4]}"
