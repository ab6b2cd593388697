"""The full hardware/software fingerprint a collection records (clocks, power limit, driver
and datasheet peaks beside the identity; the identity and its id: selector/fingerprint.py)."""

from __future__ import annotations

import platform
import subprocess
import time

from kselect.selector.fingerprint import device_peaks, fingerprint_id


def _nvidia_smi(query: str) -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def collect_fingerprint(device_index: int = 0) -> dict:
    """Read the fingerprint of this process's GPU `device_index` (CPU-only machines too)."""
    import torch

    fp: dict = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "hip_version": getattr(torch.version, "hip", None),
        "python_version": platform.python_version(),
        "host": platform.node(),
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        import triton

        fp["triton_version"] = triton.__version__
    except ImportError:
        fp["triton_version"] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device_index)
        fp.update(
            {
                "gpu_name": props.name,
                "sm_count": props.multi_processor_count,
                "shared_memory_per_block_optin": int(getattr(props, "shared_memory_per_block_optin", 0)),
                "l2_cache_bytes": int(getattr(props, "L2_cache_size", 0)),
                "total_memory_bytes": int(props.total_memory),
                "compute_capability": f"{props.major}.{props.minor}",
                "gcn_arch": getattr(props, "gcnArchName", None) if torch.version.hip else None,
            }
        )
        smi = _nvidia_smi("driver_version,clocks.max.sm,clocks.max.mem,clocks.sm,power.limit")
        if smi:
            parts = [p.strip() for p in smi.split(",")]
            keys = ["driver_version", "sm_clock_max_mhz", "mem_clock_max_mhz", "sm_clock_now_mhz", "power_limit_w"]
            fp.update(dict(zip(keys, parts)))
    else:
        fp.update(
            {
                "gpu_name": "cpu",
                "sm_count": 0,
                "shared_memory_per_block_optin": 0,
                "compute_capability": None,
                "l2_cache_bytes": 0,
            }
        )
    fp.update(device_peaks(fp["gpu_name"]))
    fp["fingerprint_id"] = fingerprint_id(fp)
    return fp
