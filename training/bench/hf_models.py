"""Hugging Face transformers models as their users compile them: `AutoModelForCausalLM` built
from a config with seeded random weights (nothing downloaded), prefill and decode through
a transformers `StaticCache` (the cache transformers' own compiled generation uses), with
`logits_to_keep=1`. The MoE model keeps transformers' default experts implementation,
`grouped_mm`, which calls torch's `_grouped_mm` wherever transformers does (under
torch.compile: bf16 weights).

Configs: Llama-3-8B's and Qwen3-30B-A3B's layer dimensions (their public config.json
values), with fewer layers; tiny ones for the CPU tests."""

from __future__ import annotations

from kselect.training.bench.e2e_cases import InferenceCase

# public config.json values; layers reduced to fit (the name says how many)
LLAMA3_8B = dict(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    tie_word_embeddings=False,
)
QWEN3_30B_A3B = dict(
    vocab_size=151936,
    hidden_size=2048,
    intermediate_size=6144,
    moe_intermediate_size=768,
    num_experts=128,
    num_experts_per_tok=8,
    norm_topk_prob=True,
    num_attention_heads=32,
    num_key_value_heads=4,
    head_dim=128,
    max_position_embeddings=40960,
    rms_norm_eps=1e-6,
    rope_theta=1000000.0,
    tie_word_embeddings=False,
)
TINY_LLAMA = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    tie_word_embeddings=False,
)
TINY_QWEN3_MOE = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    moe_intermediate_size=32,
    num_experts=8,
    num_experts_per_tok=2,
    norm_topk_prob=True,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=512,
    tie_word_embeddings=False,
)
CONFIGS = {  # name -> (model_type, config values, layers, note)
    "hf-llama3-8b-2l": ("llama", LLAMA3_8B, 2, "transformers LlamaForCausalLM, Llama-3-8B config, 2 of 32 layers"),
    "hf-qwen3-moe-2l": (
        "qwen3_moe",
        QWEN3_30B_A3B,
        2,
        "transformers Qwen3MoeForCausalLM, Qwen3-30B-A3B config (128 experts, top-8), 2 of 48 layers, "
        "experts through grouped_mm",
    ),
    "hf-llama-tiny": ("llama", TINY_LLAMA, 1, "transformers LlamaForCausalLM, tiny config, 1 layer (CPU tests)"),
    "hf-qwen3-moe-tiny": (
        "qwen3_moe",
        TINY_QWEN3_MOE,
        1,
        "transformers Qwen3MoeForCausalLM, tiny config, 1 layer (CPU tests)",
    ),
}


def config(name: str):
    """The transformers config of a named model (random weights come from it)."""
    from transformers import AutoConfig

    model_type, values, layers, _ = CONFIGS[name]
    return AutoConfig.for_model(model_type, num_hidden_layers=layers, **values)


def build_model(name: str, device, dtype, seed: int):
    """`AutoModelForCausalLM.from_config`, its own random init under `seed`, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config(name), dtype=dtype)
    return model.eval()


def build(name: str, spec: dict, device, dtype):
    """(model, inference case of spec["workload"], note)."""
    model = build_model(name, device, dtype, spec["seed"])
    case = (prefill if spec["workload"] == "prefill" else decode)(model, spec)
    return model, case, CONFIGS[name][3]


def _step(model, cache, start: int):
    """The step users compile: the model over new tokens at positions start.. of the static
    cache, the last position's logits. transformers' StaticCache counts the positions it has
    written (`cumulative_length`, a tensor per layer) and writes the next tokens after them;
    the step first sets that count back to `start` (in place, so it is part of the compiled
    graph), so that every timed call writes the same slots, as one real step does."""

    def fn(ids, position_ids):
        for layer in cache.layers:
            layer.cumulative_length.fill_(start)
        return model(input_ids=ids, past_key_values=cache, position_ids=position_ids, logits_to_keep=1).logits

    return fn


def _new_cache(model, length: int):
    from transformers import StaticCache

    return StaticCache(config=model.config, max_cache_len=length)


def _ids(spec, vocab, length, device, offset=0):
    from kselect.training.bench.e2e_cases import tokens

    return tokens(spec, vocab, length, device, offset)


def _run(model, spec: dict, decode_step: bool):
    """(step fn, its inputs) on a fresh cache: the prompt written eagerly first for decode."""
    import torch

    device, seq, vocab = model.device, spec["seq"], model.config.vocab_size
    cache = _new_cache(model, seq + 1)
    positions = torch.arange(seq, device=device).expand(spec["batch"], seq)
    prompt = _ids(spec, vocab, seq, device)
    if not decode_step:
        return _step(model, cache, 0), (prompt, positions)
    with torch.no_grad():
        _step(model, cache, 0)(prompt, positions)
    position = torch.full((spec["batch"], 1), seq, device=device)
    return _step(model, cache, seq), (_ids(spec, vocab, 1, device, offset=2), position)


def _case(model, spec: dict, decode_step: bool, tokens_per_step: int) -> InferenceCase:
    from kselect.training.bench.e2e_cases import fp32_copy

    fn, inputs = _run(model, spec, decode_step)

    def fp32_reference():
        model32 = fp32_copy(model)
        if model32 is None:
            return None
        fn32, inputs32 = _run(model32, spec, decode_step)  # the same prompt through fp32 weights
        return fn32(*inputs32)

    return InferenceCase(fn, inputs, tokens_per_step, fp32_reference)


def prefill(model, spec: dict) -> InferenceCase:
    """A prompt of `seq` tokens into the static cache."""
    return _case(model, spec, False, spec["batch"] * spec["seq"])


def decode(model, spec: dict) -> InferenceCase:
    """One token per sequence at position `seq`, after an eager prefill of the prompt."""
    return _case(model, spec, True, spec["batch"])
