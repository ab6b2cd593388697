"""A grouped GEMM problem (`torch._grouped_mm`) and the rows each group gets.

G independent GEMMs share one launch. The forms Inductor lowers (kernel/mm_grouped.py), named
by the operands' ranks:
- "2d3d": A (M, K) holds every group's rows back to back, B (G, K, N); `offs` (G,) ends each
  group's rows. The MoE expert layer: M = tokens * top-k, the rows per group set by routing.
- "3d3d": A (G, M, K), B (G, K, N), no offsets: a bmm, every group M rows.
- "3d2d": A (G, M, K), B (K, N) ragged in N: `offs` ends each group's columns; output (M, N).
- "2d2d": A (M, K), B (K, N), ragged in K (a weight gradient): output (G, M, N).
`layout` is as in kernels/problem.py (B "t": stored K-major, like an expert weight (G, N, K)).
`routing` says how the ragged dimension splits over the groups: "uniform" is exactly the split
Inductor benchmarks with (`create_offsets`); "zipf<s>" draws rows per group from a Zipf law of
exponent s over a seeded random order of the groups (a few hot experts, as real routing is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kselect.kernels.op_names import GROUPED_MM
from kselect.kernels.problem import DTYPE_BYTES, LAYOUTS, ProblemError, _as_int, canonical_dtype

FORMS = ("2d3d", "3d3d", "3d2d", "2d2d")
OP = GROUPED_MM
TMA_ALIGNMENT_BYTES = 16  # Inductor rounds benchmark offsets to 16 bytes of the ragged dim
_ROUTING = re.compile(r"^(uniform|zipf(\d+(?:\.\d+)?))$")
_KEY = re.compile(
    r"^grouped_mm:G(\d+):(\d+)x(\d+)x(\d+):(\w+):([nt]{2}):(2d3d|3d3d|3d2d|2d2d):([a-z0-9.]+)(?::s(\d+))?$"
)


def _int_at_least(name: str, value, least: int) -> int:
    """`value` as an int (a CSV's '4096' too) of at least `least`, else an error naming `name`."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else _as_int(name, value)
    if number < least:
        raise ProblemError(f"{name} must be {'positive' if least == 1 else f'>= {least}'}, got {number}")
    return number


def check_routing(routing: str) -> str:
    """'uniform' or 'zipf<s>' with s > 0 (e.g. 'zipf1.2'); anything else is refused by name."""
    m = _ROUTING.match(str(routing))
    if not m or (m.group(2) is not None and float(m.group(2)) <= 0):
        raise ProblemError(f"unknown routing {routing!r}: expected 'uniform' or 'zipf<s>' with s > 0, e.g. 'zipf1.2'")
    return m.group(0)


@dataclass(frozen=True, order=True)
class GroupedProblem:
    G: int
    M: int  # rows: all groups' together in "2d3d"/"2d2d", each group's in "3d3d"/"3d2d"
    N: int  # columns: all groups' together in "3d2d"
    K: int  # reduction: all groups' together in "2d2d"
    dtype: str = "bf16"
    layout: str = "nt"
    form: str = "2d3d"
    routing: str = "uniform"
    seed: int = 0
    model: str = field(default="", compare=False, hash=False)

    def __post_init__(self):
        for name, least in (("G", 1), ("M", 1), ("N", 1), ("K", 1), ("seed", 0)):
            object.__setattr__(self, name, _int_at_least(name, getattr(self, name), least))
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.layout not in LAYOUTS:
            raise ProblemError(f"unknown layout {self.layout!r}: expected one of {LAYOUTS}")
        if self.form not in FORMS:
            raise ProblemError(f"unknown grouped form {self.form!r}: expected one of {FORMS}")
        object.__setattr__(self, "routing", check_routing(self.routing))
        if self.ragged_dim is None and self.routing != "uniform":
            raise ProblemError(f"form {self.form!r} has no offsets: routing must be 'uniform', got {self.routing!r}")

    @property
    def op(self) -> str:
        return OP

    @property
    def batch(self) -> int:
        """The group count, where the dataset's schema keeps a bmm's batch."""
        return self.G

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def ragged_dim(self) -> str | None:
        """The dimension the offsets split over the groups ("M", "N", "K"), None for "3d3d"."""
        return {"2d3d": "M", "3d2d": "N", "2d2d": "K", "3d3d": None}[self.form]

    @property
    def flops(self) -> float:
        """2 * the multiply-adds of every group together (a ragged dim counts once in total)."""
        per_group = 2.0 * self.M * self.N * self.K
        return per_group if self.ragged_dim else per_group * self.G

    @property
    def key(self) -> str:
        """Stable identity, routing included (the model tag is provenance, not identity); the
        seed is named only where a seeded draw makes the rows."""
        key = f"{OP}:G{self.G}:{self.M}x{self.N}x{self.K}:{self.dtype}:{self.layout}:{self.form}:{self.routing}"
        return key + (f":s{self.seed}" if self.routing != "uniform" else "")

    @classmethod
    def from_key(cls, key: str, model: str = "") -> "GroupedProblem":
        m = _KEY.match(str(key))
        if not m:
            raise ProblemError(f"not a grouped_mm problem key: {key!r}")
        g, mm, n, k, dtype, layout, form, routing, seed = m.groups()
        return cls(int(g), int(mm), int(n), int(k), dtype, layout, form, routing, int(seed or 0), model)

    def with_routing(self, routing: str, seed: int = 0) -> "GroupedProblem":
        return GroupedProblem(
            self.G, self.M, self.N, self.K, self.dtype, self.layout, self.form, routing, seed, self.model
        )

    def ragged_total(self) -> int:
        return {"M": self.M, "N": self.N, "K": self.K}.get(self.ragged_dim, 0)

    def group_sizes(self) -> np.ndarray:
        """Each group's share of the ragged dimension (int64, sums to it); for "3d3d" every
        group's M."""
        if self.ragged_dim is None:
            return np.full(self.G, self.M, dtype=np.int64)
        return np.diff(self.offsets(), prepend=0)

    def offsets(self) -> np.ndarray:
        """The `offs` tensor's values (int64 here; int32 on the device): each group's end."""
        total, alignment = self.ragged_total(), TMA_ALIGNMENT_BYTES // self.dtype_bytes
        if self.routing == "uniform":
            return inductor_offsets(total, self.G, alignment)
        sizes = zipf_sizes(total, self.G, float(self.routing[4:]), self.seed)
        if self.ragged_dim == "K":  # a K split must keep every group's K start 16-byte aligned
            sizes = _aligned(sizes, total, alignment)
        return np.cumsum(sizes)


def inductor_offsets(end: int, groups: int, alignment: int) -> np.ndarray:
    """The offsets Inductor benchmarks every grouped GEMM with (mm_grouped.create_offsets): equal
    shares rounded half-to-even to `alignment`, clamped to `end`, the last exactly `end`. At
    decode (end < groups * alignment) this piles the rows into a few groups."""
    ends = np.arange(1, groups + 1, dtype=np.float32) * np.float32(end / groups)
    ends[:-1] = np.round(ends[:-1] / alignment) * alignment
    ends = np.minimum(ends, end)
    ends[-1] = end
    return ends.astype(np.int64)


def zipf_sizes(total: int, groups: int, s: float, seed: int) -> np.ndarray:
    """`total` rows over `groups` drawn multinomially from p(rank r) ~ 1 / r^s, the ranks given
    to the groups in a seeded random order."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, groups + 1, dtype=np.float64) ** s
    p = weights[rng.permutation(groups)]
    return rng.multinomial(total, p / p.sum()).astype(np.int64)


def _aligned(sizes: np.ndarray, total: int, alignment: int) -> np.ndarray:
    """Sizes rounded down to `alignment`, the remainder to the largest group (sum kept)."""
    out = (sizes // alignment) * alignment
    out[int(np.argmax(sizes))] += total - int(out.sum())
    return out
