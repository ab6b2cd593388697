"""A GEMM problem: the one description of "what to multiply" shared by every backend.

C[b] = op(A[b]) @ op(B[b]) with A of logical shape (M, K) and B of logical shape (K, N).
`layout` names how each operand sits in memory: the first letter is A, the second B;
'n' = row-major (as logically shaped), 't' = stored transposed. So a Linear forward
x @ W.T is "nt" (W is (N, K) row-major), its input gradient dY @ W is "nn", and its
weight gradient dY.T @ X is "tn".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4}  # tf32: fp32 operands, TF32 math (precision.py)
TORCH_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16", "float": "fp32"}
LAYOUTS = ("nn", "nt", "tn", "tt")
OPS = ("mm", "addmm", "bmm")


class ProblemError(ValueError):
    """A GEMM problem description that cannot be valid; the message names the field."""


def canonical_dtype(dtype) -> str:
    """Map 'bf16', 'bfloat16' or torch.bfloat16 to our short name; reject anything else."""
    name = str(dtype).replace("torch.", "").strip().lower()
    name = TORCH_DTYPE_NAMES.get(name, name)
    if name not in DTYPE_BYTES:
        raise ProblemError(f"unknown dtype {dtype!r}: expected one of {sorted(DTYPE_BYTES)}")
    return name


def _as_int(name: str, value) -> int:
    """Accept ints, integral floats and decimal strings ('4096' from a CSV); nothing else."""
    try:
        as_float = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ProblemError(f"{name} must be an integer, got {value!r}") from None
    if not as_float.is_integer():
        raise ProblemError(f"{name} must be an integer, got {value!r}")
    return int(as_float)


@dataclass(frozen=True, order=True)
class Problem:
    M: int
    N: int
    K: int
    dtype: str = "bf16"
    layout: str = "nt"
    op: str = "mm"
    batch: int = 1
    model: str = field(default="", compare=False, hash=False)

    def __post_init__(self):
        for name in ("M", "N", "K", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                value = _as_int(name, value)
                object.__setattr__(self, name, value)
            if value <= 0:
                raise ProblemError(f"{name} must be positive, got {value}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if self.layout not in LAYOUTS:
            raise ProblemError(f"unknown layout {self.layout!r}: expected one of {LAYOUTS}")
        if self.op not in OPS:
            raise ProblemError(f"unknown op {self.op!r}: expected one of {OPS}")
        if self.op != "bmm" and self.batch != 1:
            raise ProblemError(f"batch={self.batch} needs op='bmm', got op={self.op!r}")

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.M * self.N * self.K

    @property
    def key(self) -> str:
        """Stable identity of the problem (the model tag is provenance, not identity)."""
        prefix = f"{self.op}" + (f"{self.batch}x" if self.op == "bmm" else "")
        return f"{prefix}:{self.M}x{self.N}x{self.K}:{self.dtype}:{self.layout}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Problem":
        fields = {k: d[k] for k in ("M", "N", "K") if k in d}
        missing = {"M", "N", "K"} - set(fields)
        if missing:
            raise ProblemError(f"problem is missing {sorted(missing)}")
        for k in ("dtype", "layout", "op", "batch", "model"):
            if k in d and d[k] is not None and d[k] == d[k]:  # skip None / NaN
                fields[k] = d[k]
        return cls(**fields)
