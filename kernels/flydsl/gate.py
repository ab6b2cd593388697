"""The one check before anything FlyDSL touches a GPU: ROCm torch + an AMD gfx942/gfx950 device.

Launching a FlyDSL kernel without the HIP runtime aborts the whole process, so the backend's
runner and the Inductor hook both call `rocm_gate()` first. Refusals are logged at debug.
"""

from __future__ import annotations

import importlib.util
import logging

from ..backend import Availability
from . import options
from .params import ARCHS

log = logging.getLogger(__name__)
DEFAULT_ARCH = "gfx942"


def device_arch(index: int = 0) -> str:
    """gcnArchName of a visible AMD device without its feature suffix ('gfx942:sramecc+' -> 'gfx942')."""
    import torch

    return torch.cuda.get_device_properties(index).gcnArchName.split(":")[0]


def rocm_gate(index: int = 0) -> Availability:
    """May FlyDSL kernels be launched in this process? If not, the reason why."""
    import torch

    if torch.version.hip is None:
        why = f"torch {torch.__version__} is not a ROCm build (torch.version.hip is None)"
    elif not torch.cuda.is_available():
        why = "ROCm torch sees no AMD GPU (torch.cuda.is_available() is False)"
    elif device_arch(index) not in ARCHS:
        why = f"AMD device {index} is {device_arch(index)}, FlyDSL GEMM targets {ARCHS}"
    elif importlib.util.find_spec("flydsl") is None:
        why = "flydsl is not installed: pip install 'kselect[flydsl]'"
    else:
        return Availability(True)
    log.debug("FlyDSL launch gate refused: %s", why)
    return Availability(False, why)


def target_arch() -> str:
    """Arch to build for: the device's when the gate passes, else KSELECT_FLYDSL_ARCH or gfx942."""
    if rocm_gate():
        return device_arch()
    return options.get("arch") or DEFAULT_ARCH
