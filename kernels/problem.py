"""A GEMM problem: the one description of "what to multiply" shared by every backend.

C[b] = op(A[b]) @ op(B[b]) with A of logical shape (M, K) and B of logical shape (K, N).
`layout` names how each operand sits in memory: the first letter is A, the second B;
'n' = row-major (as logically shaped), 't' = stored transposed. So a Linear forward
x @ W.T is "nt" (W is (N, K) row-major), its input gradient dY @ W is "nn", and its
weight gradient dY.T @ X is "tn".

`scaled_mm` is fp8 `torch._scaled_mm`: C = (A @ B) * scale_a * scale_b in `out_dtype`, with
`scaling` "tensorwise" (one fp32 scale per operand) or "rowwise" (scale_a (M, 1), scale_b
(1, N)); A row-major and B column-major ("nt"), as cuBLASLt and Inductor's lowering require.
Its three fields default to empty/False, so every other problem (and its key) is as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kselect.kernels.op_names import ADDMM, BMM, MM, SCALED_MM

DTYPE_BYTES = {
    "bf16": 2,
    "fp16": 2,
    "fp32": 4,
    "tf32": 4,
    "fp8e4m3": 1,
}  # tf32: fp32 operands, TF32 math (precision.py)
TORCH_DTYPE_NAMES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "half": "fp16",
    "float": "fp32",
    "float8_e4m3fn": "fp8e4m3",
}
LAYOUTS = ("nn", "nt", "tn", "tt")
OPS = (MM, ADDMM, BMM, SCALED_MM)
# fp8 `_scaled_mm`: operand dtypes (e4m3fn only: e5m2 also reaches Inductor's lowering, but is
# a gradient format, and cuBLASLt refuses e5m2 x e5m2), the output dtypes and scaling kinds
# Inductor's Triton templates serve (blockwise and MX scales are not modelled).
FP8_DTYPES = ("fp8e4m3",)
SCALED_OUT_DTYPES = ("bf16", "fp16", "fp32")
SCALINGS = ("tensorwise", "rowwise")


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


def key_op(key: str) -> str:
    """The op of a Problem.key ("mm", "addmm", "bmm", "scaled_mm"): its first field, a bmm's
    batch ("bmm4x") dropped."""
    head = key.split(":", 1)[0]
    return "bmm" if head.startswith("bmm") else head


def key_scaling(key: str) -> str | None:
    """The scaling kind of a scaled_mm's Problem.key (its fifth field), None for other ops."""
    parts = key.split(":")
    return parts[4] if parts[0] == "scaled_mm" and len(parts) > 4 else None


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
    out_dtype: str = ""  # scaled_mm only: C's dtype
    scaling: str = ""  # scaled_mm only: "tensorwise" | "rowwise"
    fast_accum: bool = False  # scaled_mm only: use_fast_accum (fp8 partial sums on Hopper)

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
        if self.op == "scaled_mm":
            self._check_scaled()
        elif self.dtype in FP8_DTYPES:
            raise ProblemError(f"dtype {self.dtype} needs op='scaled_mm', got op={self.op!r}")
        elif self.out_dtype or self.scaling or self.fast_accum:
            raise ProblemError(f"out_dtype, scaling and fast_accum belong to op='scaled_mm', got op={self.op!r}")

    def _check_scaled(self) -> None:
        if self.dtype not in FP8_DTYPES:
            raise ProblemError(f"scaled_mm needs fp8 operands {FP8_DTYPES}, got dtype {self.dtype!r}")
        out = canonical_dtype(self.out_dtype or "bf16")
        if out not in SCALED_OUT_DTYPES:
            raise ProblemError(f"scaled_mm out_dtype must be one of {SCALED_OUT_DTYPES}, got {self.out_dtype!r}")
        object.__setattr__(self, "out_dtype", out)
        if self.scaling not in SCALINGS:
            raise ProblemError(f"scaled_mm scaling must be one of {SCALINGS}, got {self.scaling!r}")
        if self.layout != "nt":
            raise ProblemError(f"scaled_mm needs layout 'nt' (A row-major, B column-major), got {self.layout!r}")
        if self.K % 16 or self.N % 16:  # torch's own check (meta and cuBLASLt): no such GEMM reaches Inductor
            raise ProblemError(f"scaled_mm needs K and N divisible by 16, got K={self.K}, N={self.N}")
        if not isinstance(self.fast_accum, bool):
            flag = str(self.fast_accum).strip().lower()
            if flag not in ("true", "false", "1", "0"):
                raise ProblemError(f"fast_accum must be true or false, got {self.fast_accum!r}")
            object.__setattr__(self, "fast_accum", flag in ("true", "1"))

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def out_dtype_bytes(self) -> int:
        """Bytes per element of C: `out_dtype`'s for scaled_mm, else the operands'."""
        return DTYPE_BYTES[self.out_dtype or self.dtype]

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.M * self.N * self.K

    @property
    def key(self) -> str:
        """Stable identity of the problem (the model tag is provenance, not identity)."""
        prefix = f"{self.op}" + (f"{self.batch}x" if self.op == "bmm" else "")
        key = f"{prefix}:{self.M}x{self.N}x{self.K}:{self.dtype}:{self.layout}"
        if self.op == "scaled_mm":  # scaled_mm:MxNxK:fp8e4m3:nt:rowwise:bf16[:fast_accum]
            key += f":{self.scaling}:{self.out_dtype}" + (":fast_accum" if self.fast_accum else "")
        return key

    @classmethod
    def from_key(cls, key: str, model: str = "") -> "Problem":
        """The problem whose `key` this is (its inverse): what a report that keeps only the key
        (a bench row's `problem`) names."""
        parts = str(key).split(":")
        head = parts[0]
        op, batch = ("bmm", head[3:-1]) if head.startswith("bmm") and head.endswith("x") else (head, "1")
        sizes = parts[1].split("x") if len(parts) > 1 else []
        fields_after = (2, 3) if op == SCALED_MM else (0,)  # scaling, out_dtype[, fast_accum]
        if op not in OPS or len(sizes) != 3 or len(parts) - 4 not in fields_after:
            raise ProblemError(f"not a GEMM problem key: {key!r}")
        fields = dict(zip("MNK", sizes), dtype=parts[2], layout=parts[3], op=op, batch=batch, model=model)
        if op == SCALED_MM:
            fast = parts[6:] == ["fast_accum"]
            if len(parts) == 7 and not fast:
                raise ProblemError(f"not a GEMM problem key: {key!r}")
            fields.update(scaling=parts[4], out_dtype=parts[5], fast_accum=fast)
        problem = cls(**fields)
        if problem.key != key:  # e.g. "bf16" spelt another way: the key names one problem only
            raise ProblemError(f"not a canonical problem key: {key!r} (the problem's key is {problem.key!r})")
        return problem

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Problem":
        fields = {k: d[k] for k in ("M", "N", "K") if k in d}
        missing = {"M", "N", "K"} - set(fields)
        if missing:
            raise ProblemError(f"problem is missing {sorted(missing)}")
        for k in ("dtype", "layout", "op", "batch", "model", "out_dtype", "scaling", "fast_accum"):
            if k in d and d[k] is not None and d[k] == d[k]:  # skip None / NaN
                fields[k] = d[k]
        return cls(**fields)
