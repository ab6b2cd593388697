"""fp8 `_scaled_mm` workloads: the projection GEMMs of LLM inference in fp8 (weights and
activations in e4m3, bf16 out), decode through prefill.

Projections of each family's decoder layer (forward, x @ W^T: layout "nt"): q and o (hidden x
hidden), k and v (kv heads x head dim), gate and up (mlp), down; lm_head is left out (fp8
recipes keep it in bf16). Mistral-7B and Mixtral-8x7B (per expert) have Llama-3-8B's
projections, so their shapes carry the first family's tag. Rowwise scaling on
every shape (per-token activation and per-channel weight scales), tensorwise on every other M,
so both scaling kinds span decode and prefill. `fp8` is the training set; `fp8-unseen` holds
families absent from it, for the confirmation bench.
"""

from __future__ import annotations

from kselect.kernels.problem import Problem, ProblemError
from kselect.training.workloads.model_configs import MODELS, UNSEEN_MODELS, ModelConfig

# Public config.json values: hidden, heads, KV heads, MLP size, vocab (unused here).
FP8_MODELS = {
    **{name: MODELS[name] for name in ("llama3-8b", "llama3-70b", "mistral-7b", "mixtral-8x7b")},
    "mixtral-8x22b": ModelConfig("mixtral-8x22b", 6144, 48, 8, 16384, 32768),  # per-expert MLP
    "qwen2.5-14b": ModelConfig("qwen2.5-14b", 5120, 40, 8, 13824, 152064),
    "qwen2.5-72b": ModelConfig("qwen2.5-72b", 8192, 64, 8, 29568, 152064),
}
FP8_UNSEEN_MODELS = dict(UNSEEN_MODELS)  # qwen2.5-7b, phi3-mini: in no fp8 training workload
# Decode batches 1..64, prefill 512..8192: 7 sizes, tensorwise at 8, 64 and 2048: 180 shapes.
FP8_TOKEN_COUNTS = (1, 8, 32, 64, 512, 2048, 8192)
FP8_UNSEEN_TOKEN_COUNTS = (2, 16, 64, 512, 8192)
FP8_WORKLOADS = ("fp8", "fp8-unseen")


def projections(cfg: ModelConfig) -> dict[str, tuple[int, int]]:
    """layer -> (N, K) of a decoder layer's projections (k and v alike, gate and up alike)."""
    return {
        "q": (cfg.heads * cfg.head_dim, cfg.hidden),
        "kv": (cfg.kv_heads * cfg.head_dim, cfg.hidden),
        "o": (cfg.hidden, cfg.heads * cfg.head_dim),
        "gate_up": (cfg.mlp, cfg.hidden),
        "down": (cfg.hidden, cfg.mlp),
    }


def fp8_shapes(models: dict, token_counts, out_dtype: str = "bf16", fast_accum: bool = False) -> list[Problem]:
    """Every projection of `models` at each M: rowwise always, tensorwise at every other M."""
    out, seen = [], set()
    for i, m in enumerate(token_counts):
        for scaling in ("rowwise", "tensorwise") if i % 2 else ("rowwise",):
            for name, cfg in models.items():
                for n, k in projections(cfg).values():
                    p = Problem(
                        m,
                        n,
                        k,
                        "fp8e4m3",
                        "nt",
                        "scaled_mm",
                        model=name,
                        out_dtype=out_dtype,
                        scaling=scaling,
                        fast_accum=fast_accum,
                    )
                    if p.key not in seen:  # families sharing a shape: the first names it
                        seen.add(p.key)
                        out.append(p)
    return out


def fp8_workload(name: str, fast_accum: bool = False) -> list[Problem]:
    """One named fp8 workload set."""
    if name == "fp8":
        return fp8_shapes(FP8_MODELS, FP8_TOKEN_COUNTS, fast_accum=fast_accum)
    if name == "fp8-unseen":
        return fp8_shapes(FP8_UNSEEN_MODELS, FP8_UNSEEN_TOKEN_COUNTS, fast_accum=fast_accum)
    raise ProblemError(f"unknown fp8 workload {name!r}: expected one of {FP8_WORKLOADS}")
