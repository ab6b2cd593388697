"""Find what a FlyDSL compile needs on this machine: flydsl itself and an `ld.lld`.

FlyDSL links with `$ROCM_PATH/llvm/bin/ld.lld`. Without ROCm, Debian's lld-19 works: we
build a stand-in prefix (`<cache>/toolchain/llvm/bin/ld.lld` -> the real binary) and point
ROCM_PATH at it. Missing pieces raise ToolchainError with the command that fixes them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
from pathlib import Path

from . import options

LLD_CANDIDATES = ("/usr/lib/llvm-19/bin/ld.lld", "ld.lld-19", "ld.lld")


class ToolchainError(RuntimeError):
    """flydsl or ld.lld is missing; the message says how to install it."""


@functools.lru_cache(maxsize=None)
def flydsl_version() -> str:
    try:
        return importlib.metadata.version("flydsl")
    except importlib.metadata.PackageNotFoundError:
        raise ToolchainError("flydsl is not installed: pip install 'kselect[flydsl]' (flydsl>=0.4,<0.6)") from None


def _find_lld() -> str:
    for name in LLD_CANDIDATES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return os.path.realpath(path)
    raise ToolchainError(
        "ld.lld not found: install Debian's lld-19 (apt-get install -y lld-19) "
        "or set ROCM_PATH to a ROCm install with llvm/bin/ld.lld"
    )


def rocm_path(cache_dir: Path) -> str:
    """A prefix whose llvm/bin/ld.lld exists: $ROCM_PATH if it has one, else a stand-in."""
    given = options.get("rocm_path")
    if given and os.access(os.path.join(given, "llvm", "bin", "ld.lld"), os.X_OK):
        return given
    lld = _find_lld()
    prefix = Path(cache_dir) / "toolchain"
    link = prefix / "llvm" / "bin" / "ld.lld"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and os.path.realpath(link) == lld):
        tmp = link.with_name(f"ld.lld.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(lld)
        os.replace(tmp, link)  # atomic: parallel callers never see a half-made link
    return str(prefix)
