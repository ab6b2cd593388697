"""A small Llama-style decoder for the end-to-end benchmark (`kselect bench e2e`).

RMSNorm, rotary embeddings, grouped-query attention through
`scaled_dot_product_attention`, SwiGLU MLP, untied (or tied) LM head. Q/K/V and gate/up are
fused projections, as in gpt-fast and vLLM: the GEMM shapes are then the ones
`training/workloads/shapes.py` lists for these models (and the cost model was trained on). Weights are
random (normal, std 0.02) from a seed; nothing is downloaded.

A static KV cache (one (k, v) pair of (batch, kv_heads, length, head_dim) tensors per layer)
serves inference: prefill (pos = 0) writes the prompt's keys and attends causally over them;
decode (one token at `pos`) writes slot `pos` and attends over slots [0, pos].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from kselect.training.workloads.shapes import MODELS


@dataclass(frozen=True)
class LlamaConfig:
    name: str
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    layers: int
    rope_theta: float = 500000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = False
    max_positions: int = 8192
    note: str = ""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def n_params(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        per_layer = qkv + self.hidden * self.hidden + 3 * self.hidden * self.intermediate + 2 * self.hidden
        head = 0 if self.tie_embeddings else self.vocab * self.hidden
        return self.vocab * self.hidden + self.layers * per_layer + self.hidden + head


def _from_public(model: str, layers: int, note: str, **over) -> LlamaConfig:
    """A preset with the layer dimensions of a public config (training/workloads/shapes.py MODELS)."""
    m = MODELS[model]
    base = LlamaConfig(
        name="",
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        intermediate=m.mlp,
        vocab=m.vocab,
        layers=layers,
        note=note,
    )
    return replace(base, **over)


PRESETS: dict[str, LlamaConfig] = {
    c.name: c
    for c in (
        _from_public(
            "llama3-8b",
            2,
            "Llama-3-8B layers (hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocab 128256), 2 of its 32 layers",
            name="llama3-8b-2l",
        ),
        _from_public("llama3-8b", 1, "Llama-3-8B layers, 1 of its 32 layers, full vocab", name="llama3-8b-1l"),
        _from_public(
            "llama3-8b",
            1,
            "Llama-3-8B layers, 1 of its 32 layers, vocab cut to 32000 (fewer distinct GEMM shapes for EXHAUSTIVE)",
            name="llama3-8b-1l-v32k",
            vocab=32000,
        ),
        LlamaConfig(
            "tiny",
            hidden=64,
            heads=4,
            kv_heads=2,
            intermediate=128,
            vocab=256,
            layers=2,
            rope_theta=10000.0,
            max_positions=512,
            note="CPU tests (fp32)",
        ),
    )
}


LAYERED = re.compile(r"^(llama3-8b)-(\d+)l$")  # llama3-8b-<N>l: N of the model's layers
PUBLIC_LAYERS = {"llama3-8b": 32}  # num_hidden_layers of the public config


def preset(name: str) -> LlamaConfig:
    """A named preset, or `llama3-8b-<N>l` for N of Llama-3-8B's 32 layers (full vocab): fixed
    costs of a compile (a model load, one measured GEMM) shrink beside a deeper graph's, whose
    GEMM shapes repeat per layer, so the bench can show both ends."""
    if name in PRESETS:
        return PRESETS[name]
    m = LAYERED.match(name)
    if m:
        layers, total = int(m.group(2)), PUBLIC_LAYERS[m.group(1)]
        if not 1 <= layers <= total:
            raise ValueError(f"model preset {name!r}: {m.group(1)} has 1 to {total} layers, not {layers}")
        return _from_public(
            m.group(1), layers, f"Llama-3-8B layers, {layers} of its {total} layers, full vocab", name=name
        )
    raise ValueError(
        f"unknown model preset {name!r}; known: {', '.join(PRESETS)}, or llama3-8b-<N>l (N = 1..32 layers)"
    )


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()  # statistics in fp32, as Llama does in bf16
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * self.weight


def rope_tables(head_dim: int, positions: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin, (positions, head_dim // 2) in fp32, for the rotate-half convention."""
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(positions, dtype=torch.float32), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """x: (batch, heads, seq, head_dim); cos/sin: (seq, head_dim // 2)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.hidden, (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim, bias=False)
        self.out = nn.Linear(cfg.heads * cfg.head_dim, cfg.hidden, bias=False)

    def forward(self, x, cos, sin, cache=None, pos: int = 0):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1
        )
        q = apply_rope(q.view(b, s, self.heads, self.head_dim).transpose(1, 2), cos, sin)
        k = apply_rope(k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2), cos, sin)
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k_cache, v_cache = cache
            k_cache[:, :, pos : pos + s] = k
            v_cache[:, :, pos : pos + s] = v
            if pos > 0:  # decode: one new token sees every cached position
                if s != 1:
                    raise ValueError(f"decode takes one token at a time, got {s} at pos {pos}")
                return self.out(self._decode_attention(q, k_cache[:, :, : pos + 1], v_cache[:, :, : pos + 1]))
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=(pos == 0 and s > 1))
        return self.out(o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))

    def _decode_attention(self, q, k, v):
        """One query per head: the heads sharing a KV head become that head's query rows, so the
        cache is read once instead of copied per query head (as decode kernels do)."""
        b = q.shape[0]
        rep = self.heads // self.kv_heads
        o = F.scaled_dot_product_attention(q.reshape(b, self.kv_heads, rep, self.head_dim), k, v)
        return o.reshape(b, 1, self.heads * self.head_dim)


class SwiGLU(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.hidden, 2 * cfg.intermediate, bias=False)
        self.down = nn.Linear(cfg.intermediate, cfg.hidden, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(cfg.hidden, cfg.norm_eps), Attention(cfg)
        self.mlp_norm, self.mlp = RMSNorm(cfg.hidden, cfg.norm_eps), SwiGLU(cfg)

    def forward(self, x, cos, sin, cache=None, pos: int = 0):
        x = x + self.attn(self.attn_norm(x), cos, sin, cache, pos)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.norm_eps)
        self.lm_head = None if cfg.tie_embeddings else nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg.head_dim, cfg.max_positions, cfg.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens, caches=None, pos: int = 0, last_only: bool = False):
        """Logits (batch, seq, vocab); (batch, 1, vocab) with last_only. caches: see module doc."""
        s = tokens.shape[1]
        if pos + s > self.cfg.max_positions:
            raise ValueError(f"positions up to {pos + s} exceed max_positions {self.cfg.max_positions}")
        cos, sin = self.rope_cos[pos : pos + s], self.rope_sin[pos : pos + s]
        x = self.embed(tokens)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i], pos)
        x = self.norm(x[:, -1:] if last_only else x)
        return F.linear(x, self.embed.weight) if self.lm_head is None else self.lm_head(x)

    def new_caches(self, batch: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Zeroed static KV cache for `length` positions, on the model's device and dtype."""
        w = self.embed.weight
        shape = (batch, self.cfg.kv_heads, length, self.cfg.head_dim)
        return [(w.new_zeros(shape), w.new_zeros(shape)) for _ in self.layers]


def init_weights(model: Llama, seed: int) -> Llama:
    """Random weights from `seed`: normal(0, 0.02) matrices and embeddings, unit norms."""
    gen = torch.Generator(device=model.embed.weight.device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=gen)
    return model


def build(cfg: LlamaConfig | str, device="cpu", dtype=torch.float32, seed: int = 0) -> Llama:
    """The model, created on `device` in `dtype` with seeded random weights."""
    cfg = preset(cfg) if isinstance(cfg, str) else cfg
    with torch.device(device):
        model = Llama(cfg)
    model.to(dtype=dtype)
    cos, sin = rope_tables(cfg.head_dim, cfg.max_positions, cfg.rope_theta)  # fp32, not rounded
    model.rope_cos, model.rope_sin = cos.to(model.rope_cos.device), sin.to(model.rope_sin.device)
    return init_weights(model, seed)
