"""Plain-data description of one FlyDSL GEMM build, and the hardware constants it depends on.

Shared by the candidate space (pure Python) and the kernel (imports flydsl), so the LDS
budget the space checks is computed from the same numbers the kernel allocates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ARCHS = ("gfx942", "gfx950")
LDS_LIMIT_BYTES = {"gfx942": 64 * 1024, "gfx950": 160 * 1024}
MFMA_K = {"gfx942": 16, "gfx950": 32}  # 16x16xK bf16/fp16 MFMA used per arch
MFMA_MN = 16
WAVE_SIZE = 64
VEC_ELEMS = 8  # 128-bit global/LDS vectors of 16-bit elements
LDS_PAD = 8  # elements appended to each LDS row (bank spread)
ELEM_BYTES = 2
MAX_THREADS = 1024
DTYPES = ("bf16", "fp16")
LAYOUTS = ("nt", "nn")
KNOB_NAMES = ("TILE_M", "TILE_N", "TILE_K", "STAGES", "WAVES_M", "WAVES_N", "SPLIT_K", "GROUP_M")


@dataclass(frozen=True)
class KernelParams:
    """Everything one compiled kernel is specialised on (problem shape included)."""

    M: int
    N: int
    K: int
    dtype: str
    layout: str
    TILE_M: int
    TILE_N: int
    TILE_K: int
    STAGES: int
    WAVES_M: int
    WAVES_N: int
    SPLIT_K: int = 1
    GROUP_M: int = 1

    @property
    def threads(self) -> int:
        return self.WAVES_M * self.WAVES_N * WAVE_SIZE

    def to_dict(self) -> dict:
        return asdict(self)


def lds_bytes(p: KernelParams) -> int:
    """LDS the kernel allocates: STAGES padded A and B tiles (B padded along its stored rows)."""
    a = p.TILE_M * (p.TILE_K + LDS_PAD)
    b = p.TILE_N * (p.TILE_K + LDS_PAD) if p.layout == "nt" else p.TILE_K * (p.TILE_N + LDS_PAD)
    return p.STAGES * (a + b) * ELEM_BYTES
