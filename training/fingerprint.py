"""Hardware/software fingerprint carried by every dataset and model.

`fingerprint_id` hashes only what changes kernel timings (GPU model, SM count, shared
memory, compute capability, CUDA/HIP, torch and triton versions), so a model can refuse
a machine it was not trained for while ignoring e.g. the hostname.
"""
from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import time

# Datasheet peaks used as features (leads, not measurements): dense tensor-core FLOP/s by
# dtype and HBM bandwidth. Matched on a substring of the device name.
DEVICE_PEAKS = {
    "H200": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0}, "mem_bandwidth_gbs": 4800.0},
    "H100": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0}, "mem_bandwidth_gbs": 3350.0},
    "A100": {"peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5}, "mem_bandwidth_gbs": 2039.0},
    "MI300X": {"peak_tflops": {"bf16": 1307.0, "fp16": 1307.0, "fp32": 163.0}, "mem_bandwidth_gbs": 5300.0},
    "MI355X": {"peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp32": 157.0}, "mem_bandwidth_gbs": 8000.0},
}
IDENTITY_KEYS = ("gpu_name", "sm_count", "shared_memory_per_block_optin", "compute_capability",
                 "cuda_version", "hip_version", "torch_version", "triton_version")


def device_peaks(gpu_name: str) -> dict:
    for tag, peaks in DEVICE_PEAKS.items():
        if tag in (gpu_name or ""):
            return peaks
    return {"peak_tflops": {}, "mem_bandwidth_gbs": 0.0}


def fingerprint_id(fp: dict) -> str:
    ident = {k: fp.get(k) for k in IDENTITY_KEYS}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def _nvidia_smi(query: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
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
        fp.update({
            "gpu_name": props.name,
            "sm_count": props.multi_processor_count,
            "shared_memory_per_block_optin": int(getattr(props, "shared_memory_per_block_optin", 0)),
            "l2_cache_bytes": int(getattr(props, "L2_cache_size", 0)),
            "total_memory_bytes": int(props.total_memory),
            "compute_capability": f"{props.major}.{props.minor}",
            "gcn_arch": getattr(props, "gcnArchName", None) if torch.version.hip else None,
        })
        smi = _nvidia_smi("driver_version,clocks.max.sm,clocks.max.mem,clocks.sm,power.limit")
        if smi:
            parts = [p.strip() for p in smi.split(",")]
            keys = ["driver_version", "sm_clock_max_mhz", "mem_clock_max_mhz", "sm_clock_now_mhz",
                    "power_limit_w"]
            fp.update(dict(zip(keys, parts)))
    else:
        fp.update({"gpu_name": "cpu", "sm_count": 0, "shared_memory_per_block_optin": 0,
                   "compute_capability": None, "l2_cache_bytes": 0})
    fp.update(device_peaks(fp["gpu_name"]))
    fp["fingerprint_id"] = fingerprint_id(fp)
    return fp
