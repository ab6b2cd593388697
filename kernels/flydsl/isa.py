"""Static features read from FlyDSL's final ISA dump (`22_final_isa.s`).

Register, LDS, spill and scratch numbers come from the amdhsa metadata the assembler itself
uses; the instruction mix is counted from the kernel body. Compiling is not launching: a
kernel can assemble with LDS over the arch limit or with spills, so `problems` says why a
compiled kernel must still be pruned.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .params import LDS_LIMIT_BYTES

_META = {
    "vgpr_count": r"\.vgpr_count:\s+(\d+)",
    "agpr_count": r"\.agpr_count:\s+(\d+)",
    "sgpr_count": r"\.sgpr_count:\s+(\d+)",
    "vgpr_spill_count": r"\.vgpr_spill_count:\s+(\d+)",
    "sgpr_spill_count": r"\.sgpr_spill_count:\s+(\d+)",
    "lds_bytes": r"\.group_segment_fixed_size:\s+(\d+)",
    "scratch_bytes": r"\.private_segment_fixed_size:\s+(\d+)",
}
# Instruction classes: counted by mnemonic prefix at the start of a body line.
_MIX = {
    "mfma": ("v_mfma",),
    "global_loads": ("buffer_load", "global_load"),
    "global_stores": ("buffer_store", "global_store"),
    "global_atomics": ("buffer_atomic", "global_atomic"),
    "lds_reads": ("ds_read", "ds_load"),
    "lds_writes": ("ds_write", "ds_store"),
    "barriers": ("s_barrier",),
    "scratch_ops": ("scratch_",),
}
_INSTR = re.compile(r"^\s+([a-z][a-z0-9_]*)", re.M)


class IsaParseError(ValueError):
    """The ISA text lacks the metadata we rely on (wrong file or a changed FlyDSL dump)."""


@dataclass(frozen=True)
class IsaStats:
    vgpr_count: int
    agpr_count: int
    sgpr_count: int
    vgpr_spill_count: int
    sgpr_spill_count: int
    lds_bytes: int
    scratch_bytes: int
    mfma: int
    global_loads: int
    global_stores: int
    global_atomics: int
    lds_reads: int
    lds_writes: int
    barriers: int
    scratch_ops: int
    instructions: int
    mfma_shape: str

    def to_dict(self) -> dict:
        return asdict(self)

    def features(self) -> dict[str, float]:
        """Numeric features (prefixed `isa_`) for the cost model."""
        return {f"isa_{k}": float(v) for k, v in asdict(self).items() if isinstance(v, int)}


def _body(text: str) -> str:
    """The instruction stream of the kernel: from its label to `s_endpgm`."""
    start = re.search(r"^[A-Za-z_][\w.]*:\s*$", text, re.M)
    end = text.find("s_endpgm")
    if not start or end < 0:
        raise IsaParseError("no kernel body (label ... s_endpgm) in the ISA text")
    return text[start.end() : end + len("s_endpgm")]


def parse_isa(text: str) -> IsaStats:
    meta = {}
    for key, pattern in _META.items():
        m = re.search(pattern, text)
        if not m:
            raise IsaParseError(f"ISA metadata has no {pattern.split(':')[0].lstrip(chr(92))} entry")
        meta[key] = int(m.group(1))
    names = [n for n in _INSTR.findall(_body(text)) if not n.startswith(".")]
    mix = {k: sum(1 for n in names if n.startswith(prefixes)) for k, prefixes in _MIX.items()}
    shape = re.search(r"\b(v_mfma_[a-z0-9_]+)", text)
    return IsaStats(**meta, **mix, instructions=len(names), mfma_shape=shape.group(1) if shape else "")


def problems(stats: IsaStats, arch: str) -> list[str]:
    """Why a compiled kernel still cannot be used on `arch` (empty when it can)."""
    out = []
    limit = LDS_LIMIT_BYTES[arch]
    if stats.lds_bytes > limit:
        out.append(f"LDS {stats.lds_bytes} B > {arch} limit {limit} B")
    if stats.vgpr_spill_count or stats.sgpr_spill_count:
        out.append(f"spills {stats.vgpr_spill_count} VGPRs and {stats.sgpr_spill_count} SGPRs")
    if stats.scratch_bytes:
        out.append(f"uses {stats.scratch_bytes} B of scratch")
    return out
