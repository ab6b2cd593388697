"""torchtitan's Llama-3 training step as torchtitan runs it: its own model definition
(`llama3_configs`, with its default FlexAttention and document masks), its own init
(`init_states`), its cross-entropy loss (sum over tokens, divided by the token count as its
trainer does) and its compile option: `apply_compile` compiles every TransformerBlock on its
own (fullgraph), and the loss is compiled as `--compile.components loss` does. kselect is
then enabled only by the environment (`KSELECT_MODE`, read at `import torch`); the bench's
supervisor sets it for this model's kselect variants (real_models.selector_env).

`titan-llama3-8b-2l`: two of Llama-3-8B's 32 layer configs; `titan-llama3-tiny`: two of
torchtitan's debug model's layers (the CPU tests). FlexAttention has no backward on a CPU, so
the tiny model's blocks attend through torchtitan's own causal ScaledDotProductAttention
module instead (one document per sequence: the same attention)."""

from __future__ import annotations

from kselect.training.bench.e2e_cases import TrainCase

FLAVORS = {  # name -> (torchtitan flavor, layers kept, its attention kept, note)
    "titan-llama3-8b-2l": ("8B", 2, True, "torchtitan Llama3Model, its 8B config, 2 of 32 layers, FlexAttention"),
    "titan-llama3-tiny": (
        "debugmodel",
        2,
        False,
        "torchtitan Llama3Model, its debugmodel config, 2 of 6 layers, causal SDPA (CPU tests)",
    ),
}


def build_model(name: str, device, dtype, seed: int):
    """torchtitan's Llama3Model of the flavor, layers cut, initialised by its own init_states."""
    import torch
    from torchtitan.models.llama3 import llama3_configs

    flavor, layers, flex, _ = FLAVORS[name]
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
    # floating tensors only: Module.to(dtype) would also cast the complex RoPE table to real
    return model._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)


def compile_as_titan(compile_fn, module, loss):
    """torchtitan's compile option (`--compile.enable`, components model and loss): every
    block compiled in place by its apply_compile, the loss function by torch.compile. The
    bench's compile_fn (the variant's torch.compile) is not used: the variant's Inductor
    settings are global and kselect comes from the environment."""
    import torch
    from torchtitan.config import CompileConfig
    from torchtitan.distributed import ParallelDims
    from torchtitan.distributed.compile import apply_compile

    config = CompileConfig(enable=True)
    dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=1, pp=1, ep=1, world_size=1)
    apply_compile(module, compile_config=config, parallel_dims=dims)
    return loss.with_compiled_loss(torch.compile(loss.cross_entropy, backend=config.backend))


class TitanLoss:
    """model -> logits -> torchtitan's cross_entropy_loss (a sum) / tokens, with the document
    masks its FlexAttention takes (one document per sequence: positions 0..seq-1)."""

    def __init__(self, model, cross_entropy=None):
        from torchtitan.components.loss import cross_entropy_loss

        self.model = model
        self.cross_entropy = cross_entropy_loss
        self.ce = cross_entropy or cross_entropy_loss

    def with_compiled_loss(self, ce):
        return TitanLoss(self.model, ce)

    def __call__(self, tokens, labels, positions):
        masks = self.model.get_attention_masks(positions) if _uses_flex(self.model) else None
        pred = self.model(tokens, positions, masks)
        return self.ce(pred, labels) / labels.numel()


def _uses_flex(model) -> bool:
    from torchtitan.models.common.attention import FlexAttention

    return isinstance(model.config.first_attention.inner_attention, FlexAttention.Config)


def build(name: str, spec: dict, device, dtype):
    """(model, training case, note)."""
    import torch

    from kselect.training.bench.e2e_cases import tokens

    model = build_model(name, device, dtype, spec["seed"])
    vocab, seq = model.config.vocab_size, spec["seq"]
    positions = torch.arange(seq, device=device).expand(spec["batch"], seq).contiguous()
    inputs = (tokens(spec, vocab, seq, device), tokens(spec, vocab, seq, device, offset=1), positions)
    case = TrainCase(model, TitanLoss, inputs, spec["batch"] * seq, compile=compile_as_titan)
    return model, case, FLAVORS[name][3]
