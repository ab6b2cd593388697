"""A candidate kernel: plain, frozen, hashable data (backend + template + knobs).

Modelled on Triton's `Config`: nothing but parameters, printable, round-trippable to JSON,
and a stable string key that names it in datasets, caches and logs.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Mapping

# A tiled template's knobs (Triton's mm and persistent TMA carry all of them).
TILE_KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")
# Knobs every template may carry; absent ones read as 0 in features.
KNOBS = (*TILE_KNOBS, "k_split")
_SHORT = {
    "BLOCK_M": "BM",
    "BLOCK_N": "BN",
    "BLOCK_K": "BK",
    "GROUP_M": "G",
    "num_stages": "S",
    "num_warps": "W",
    "k_split": "KS",
}


@dataclass(frozen=True, order=True)
class Candidate:
    backend: str  # registered Backend name: "aten", "triton", "flydsl", ...
    template: str  # backend-specific family: "mm", "persistent_tma", "decompose_k", ...
    params: tuple = ()  # sorted (name, value) pairs

    @classmethod
    def make(cls, backend: str, template: str, **params: Any) -> "Candidate":
        """Interned: equal candidates made twice are one object, so its key is built once per
        process (the selector maps ~2,400 Inductor choices per GEMM to candidates)."""
        c = cls(backend, template, tuple(sorted(params.items())))
        if cls is not Candidate:
            return c
        try:
            return _INTERNED.setdefault(c, c)
        except TypeError:  # an unhashable knob value: usable, just not interned
            return c

    @property
    def kwargs(self) -> dict:
        return dict(self.params)

    def get(self, name: str, default: Any = 0) -> Any:
        return self.kwargs.get(name, default)

    @functools.cached_property
    def key(self) -> str:
        parts = [f"{_SHORT.get(k, k)}{v}" for k, v in self.params]
        return f"{self.backend}:{self.template}" + (":" + "-".join(parts) if parts else "")

    def to_json(self) -> str:
        return json.dumps(
            {"backend": self.backend, "template": self.template, "params": dict(self.params)}, sort_keys=True
        )

    @classmethod
    def from_json(cls, text: str | Mapping) -> "Candidate":
        d = json.loads(text) if isinstance(text, str) else dict(text)
        return cls.make(d["backend"], d["template"], **d.get("params", {}))

    def __str__(self) -> str:
        return self.key


_INTERNED: dict = {}
