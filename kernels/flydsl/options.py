"""Every environment variable the FlyDSL backend reads or sets, declared once.

`FlyDSLOptions` declares ours (kselect/kernels/settings.py: each field's variable, kind and
help), read one at a time with `get(field)` so a bad value fails where it is used, naming the
variable; `CHILD_ENV` names the FlyDSL/ROCm variables the compile subprocess is given, so
nothing else in the package touches `os.environ` ad hoc.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kselect.kernels import settings
from kselect.kernels.settings import Choice, Number, Text, setting


@dataclasses.dataclass(frozen=True)
class FlyDSLOptions(settings.Settings):
    cache: str = setting(
        str(Path.home() / ".cache" / "kselect" / "flydsl"),
        Text(),
        "on-disk cache of compile results, final ISA and FlyDSL binaries",
        env="KSELECT_FLYDSL_CACHE",
    )
    arch: str = setting(
        "",
        Text(),
        "target arch when no AMD GPU is present (gfx942|gfx950); default: the device's, else gfx942",
        env="KSELECT_FLYDSL_ARCH",
    )
    timeout: int = setting(
        180, Number(int, 1), "seconds before one compile subprocess is killed", env="KSELECT_FLYDSL_TIMEOUT"
    )
    workers: int = setting(2, Number(int, 1), "compile subprocesses run at once", env="KSELECT_FLYDSL_WORKERS")
    worker_fault: str = setting(
        "",
        Choice("", "abort", "hang"),
        "testing only: 'abort' or 'hang' makes the compile child fail that way before compiling",
        env="KSELECT_FLYDSL_WORKER_FAULT",
    )
    rocm_path: str = setting(
        "", Text(), "ROCm (or stand-in) prefix whose llvm/bin/ld.lld FlyDSL links with", env="ROCM_PATH"
    )


OPTIONS = settings.options(FlyDSLOptions)

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


def get(field: str, environ=None):
    """The value of one option (its variable's, else its default); OptionError names a bad one."""
    return settings.env_value(FlyDSLOptions, field, environ)


def describe() -> str:
    return settings.describe(FlyDSLOptions)
