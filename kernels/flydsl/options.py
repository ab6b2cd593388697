"""Every environment variable the FlyDSL backend reads or sets, declared once.

`OPTIONS` are ours (read with `get`); `CHILD_ENV` names the FlyDSL/ROCm variables the
compile subprocess is given, so nothing else in the package touches `os.environ` ad hoc.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Option:
    name: str
    default: str
    help: str


OPTIONS = {o.name: o for o in (
    Option("KSELECT_FLYDSL_CACHE", str(Path.home() / ".cache" / "kselect" / "flydsl"),
           "on-disk cache of compile results, final ISA and FlyDSL binaries"),
    Option("KSELECT_FLYDSL_ARCH", "",
           "target arch when no AMD GPU is present (gfx942|gfx950); default: the device's, else gfx942"),
    Option("KSELECT_FLYDSL_TIMEOUT", "180", "seconds before one compile subprocess is killed"),
    Option("KSELECT_FLYDSL_WORKERS", "2", "compile subprocesses run at once"),
    Option("KSELECT_FLYDSL_WORKER_FAULT", "",
           "testing only: 'abort' or 'hang' makes the compile child fail that way before compiling"),
    Option("ROCM_PATH", "", "ROCm (or stand-in) prefix whose llvm/bin/ld.lld FlyDSL links with"),
)}

# Set (never read) by us for the compile child; FlyDSL reads them.
CHILD_ENV = {
    "COMPILE_ONLY": "1: compile without a GPU, skip the launch",
    "ARCH": "FlyDSL target arch override",
    "FLYDSL_GPU_ARCH": "arch kernel code asks for (defaults to gfx942 silently if unset)",
    "FLYDSL_DEBUG_DUMP_ASM": "1: dump the final ISA",
    "FLYDSL_DUMP_DIR": "where the ISA dump goes",
    "FLYDSL_RUNTIME_CACHE_DIR": "FlyDSL's binary cache, one per cache entry",
    "ROCM_PATH": "prefix holding llvm/bin/ld.lld",
}


def get(name: str) -> str:
    """The value of a declared option (its default when unset); undeclared names are a bug."""
    if name not in OPTIONS:
        raise KeyError(f"undeclared option {name!r}: declare it in kselect.kernels.flydsl.options")
    value = os.environ.get(name, "")
    return value if value != "" else OPTIONS[name].default


def get_int(name: str, minimum: int = 1) -> int:
    raw = get(name)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def describe() -> str:
    return "\n".join(f"{o.name} (default {o.default!r}): {o.help}" for o in OPTIONS.values())
