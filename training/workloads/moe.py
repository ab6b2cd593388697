"""MoE expert layers as grouped GEMMs (`torch._grouped_mm`, form "2d3d", layout "nt"): the
training set and the held-out unseen set of the grouped-GEMM model (docs/grouped-mm.md).

An expert layer is two grouped GEMMs over the experts on one device: gate and up projections
fused (N = 2 * expert MLP width, K = hidden) and the down projection (N = hidden, K = expert MLP
width). Its rows are the tokens' routed copies that land on this device: tokens * top-k * (local
experts / experts) on average, split over the local experts by the routing. Every shape is
measured under Inductor's uniform split and under Zipf-skewed routing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kselect.kernels.grouped.problem import GroupedProblem


@dataclass(frozen=True)
class MoEConfig:
    name: str
    hidden: int
    expert_mlp: int  # one routed expert's intermediate width
    experts: int
    top_k: int
    local_experts: int  # experts on one device (experts / expert-parallel degree)

    def rows(self, tokens: int) -> int:
        """Routed rows landing on one device's experts for `tokens` tokens (at least 1)."""
        return max(1, tokens * self.top_k * self.local_experts // self.experts)

    def problems(self, tokens: int, routings: tuple[str, ...], seed: int = 0) -> list[GroupedProblem]:
        shapes = {"gate_up": (2 * self.expert_mlp, self.hidden), "down": (self.hidden, self.expert_mlp)}
        out = []
        for layer, (n, k) in shapes.items():
            for routing in routings:
                out.append(
                    GroupedProblem(
                        G=self.local_experts,
                        M=self.rows(tokens),
                        N=n,
                        K=k,
                        routing=routing,
                        seed=seed if routing != "uniform" else 0,
                        model=f"{self.name}/{layer}/t{tokens}",
                    )
                )
        return out


# public model configs (hidden size, routed-expert MLP width, routed experts, top-k); the
# expert-parallel split of the largest is 8 devices
TRAINING_MODELS = (
    MoEConfig("mixtral-8x7b", 4096, 14336, 8, 2, 8),
    MoEConfig("qwen1.5-moe-a2.7b", 2048, 1408, 60, 4, 60),
    MoEConfig("qwen3-30b-a3b", 2048, 768, 128, 8, 128),
    MoEConfig("deepseek-v2-ep8", 5120, 1536, 160, 6, 20),
    MoEConfig("deepseek-v3-ep8", 7168, 2048, 256, 8, 32),
)
UNSEEN_MODELS = (
    MoEConfig("mixtral-8x22b", 6144, 16384, 8, 2, 8),
    MoEConfig("deepseek-v2-lite", 2048, 1408, 64, 6, 64),
    MoEConfig("qwen3-235b-a22b-ep4", 4096, 1536, 128, 8, 32),
)
DECODE_TOKENS = (1, 8, 64)  # one token per sequence: batch 1 to 64
PREFILL_TOKENS = (512, 2048, 8192)
UNSEEN_TOKENS = (4, 32, 1024, 4096)
TRAINING_ROUTINGS = ("uniform", "zipf1.2")
UNSEEN_ROUTINGS = ("uniform", "zipf0.8", "zipf1.2")


def moe_training_problems(seed: int = 0) -> list[GroupedProblem]:
    """5 models x 2 projections x 6 token counts = 60 shapes, each uniform and Zipf(1.2)."""
    return [
        p
        for model in TRAINING_MODELS
        for tokens in DECODE_TOKENS + PREFILL_TOKENS
        for p in model.problems(tokens, TRAINING_ROUTINGS, seed)
    ]


def moe_unseen_problems(seed: int = 1) -> list[GroupedProblem]:
    """Held-out models at held-out token counts, with a Zipf exponent training never saw."""
    return [
        p for model in UNSEEN_MODELS for tokens in UNSEEN_TOKENS for p in model.problems(tokens, UNSEEN_ROUTINGS, seed)
    ]
