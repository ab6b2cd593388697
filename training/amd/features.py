"""Engineered features of a tuned-GEMM problem: functions of the input columns only, never
of the tuning's outcome (that would leak the answer)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kselect.training.amd.tables import FLAG_COLUMNS, INPUT_COLUMNS, TableError

KNOWN_ARCHS = ("gfx942", "gfx950", "gfx1250")
DTYPE_BYTES = {
    "torch.bfloat16": 2,
    "torch.float16": 2,
    "torch.float32": 4,
    "torch.float8_e4m3fnuz": 1,
    "torch.float8_e4m3fn": 1,
}
# Output tiles typical of the backends' kernels (skinny/flydsl 16x64 .. asm/hipBLASLt 256x256).
TILES = ((16, 64), (32, 64), (64, 64), (80, 64), (128, 128), (256, 128), (256, 256))


def _arch_number(arch: str) -> float:
    """gfx942 -> 942, gfx1250 -> 1250: a numeric handle that also orders unseen archs."""
    digits = "".join(ch for ch in str(arch) if ch.isdigit())
    return float(int(digits)) if digits else 0.0


def _trailing_zero_bits(values: np.ndarray, cap: int = 9) -> np.ndarray:
    """How many times 2 divides a size (capped): alignment decides which kernels apply."""
    out = np.zeros(values.shape, dtype=float)
    for p in range(1, cap + 1):
        out += (values % (2**p)) == 0
    return out


def features(frame: pd.DataFrame) -> pd.DataFrame:
    """Engineered features of each problem. Reads INPUT_COLUMNS only, never outcomes."""
    missing = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if missing:
        raise TableError(f"problems lack input column(s) {', '.join(missing)}")
    m, n, k = (frame[c].to_numpy(dtype=float) for c in ("M", "N", "K"))
    cu = frame["cu_num"].to_numpy(dtype=float)
    in_bytes = frame["dtype"].map(DTYPE_BYTES).fillna(2).to_numpy(dtype=float)
    out_bytes = frame["outdtype"].map(DTYPE_BYTES).fillna(2).to_numpy(dtype=float)
    f: dict[str, np.ndarray] = {}
    for arch in KNOWN_ARCHS:
        f[f"arch_{arch}"] = (frame["gfx"] == arch).to_numpy(dtype=float)
    f["arch_number"] = frame["gfx"].map(_arch_number).to_numpy(dtype=float)
    f["cu_num"] = cu
    for flag in FLAG_COLUMNS:
        f[flag] = frame[flag].astype(bool).to_numpy(dtype=float)
    f["in_bytes"], f["out_bytes"] = in_bytes, out_bytes
    lm, ln, lk = np.log2(m), np.log2(n), np.log2(k)
    f.update(
        log_m=lm,
        log_n=ln,
        log_k=lk,
        log_mn=lm + ln,
        log_mk=lm + lk,
        log_nk=ln + lk,
        log_mnk=lm + ln + lk,
        log_m_over_n=lm - ln,
        log_m_over_k=lm - lk,
        log_n_over_k=ln - lk,
        log_mnk_per_cu=lm + ln + lk - np.log2(cu),
    )
    moved = in_bytes * (m * k + n * k) + out_bytes * m * n
    f["log_bytes"] = np.log2(moved)
    f["log_intensity"] = np.log2(2 * m * n * k / moved)  # flop per byte: memory vs compute
    for tm, tn in TILES:
        tiles = np.ceil(m / tm) * np.ceil(n / tn)
        waves = np.ceil(tiles / cu)
        f[f"log_tiles_{tm}x{tn}"] = np.log2(tiles)
        f[f"waves_{tm}x{tn}"] = tiles / cu
        f[f"wave_eff_{tm}x{tn}"] = tiles / (waves * cu)  # last-wave occupancy
    for name, values in (("m", m), ("n", n), ("k", k)):
        f[f"pow2_{name}"] = _trailing_zero_bits(values)
    for limit in (1, 8, 16, 32, 64, 256):
        f[f"m_le_{limit}"] = (m <= limit).astype(float)
    return pd.DataFrame(f, index=frame.index)
