"""Public model configs whose linear layers make the workload sets (training/workloads/shapes.py,
fp8_shapes.py): hidden size, heads, KV heads, MLP size, vocab."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    name: str
    hidden: int
    heads: int
    kv_heads: int
    mlp: int
    vocab: int
    fused_qkv: bool = True
    gated_mlp: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def linears(self) -> dict[str, tuple[int, int]]:
        """layer -> (N = out_features, K = in_features)."""
        kv = self.kv_heads * self.head_dim
        return {
            "qkv": (self.hidden + 2 * kv, self.hidden),
            "o_proj": (self.hidden, self.hidden),
            "gate_up": ((2 if self.gated_mlp else 1) * self.mlp, self.hidden),
            "down": (self.hidden, self.mlp),
            "lm_head": (self.vocab, self.hidden),
        }


# Public configs (config.json of each model on its hub page).
MODELS = {
    "llama3-8b": ModelConfig("llama3-8b", 4096, 32, 8, 14336, 128256),
    "llama3-70b": ModelConfig("llama3-70b", 8192, 64, 8, 28672, 128256),
    "mistral-7b": ModelConfig("mistral-7b", 4096, 32, 8, 14336, 32000),
    "mixtral-8x7b": ModelConfig("mixtral-8x7b", 4096, 32, 8, 14336, 32000),  # per-expert MLP
    "gpt2": ModelConfig("gpt2", 768, 12, 12, 3072, 50257, gated_mlp=False),
    "gpt-neox-20b": ModelConfig("gpt-neox-20b", 6144, 64, 64, 24576, 50432, gated_mlp=False),
}

# Families kept out of every training workload: the held-out benchmark's (`unseen` workload).
UNSEEN_MODELS = {
    "qwen2.5-7b": ModelConfig("qwen2.5-7b", 3584, 28, 4, 18944, 152064),
    "phi3-mini": ModelConfig("phi3-mini", 3072, 32, 32, 8192, 32064),
}
