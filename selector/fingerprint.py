"""What identifies the machine a kernel time belongs to, written once for datasets, models and
the selector's decision cache.

`fingerprint_id` hashes only what changes kernel timings -- GPU model, SM count, shared memory,
compute capability, CUDA/HIP, torch and triton versions (and, for a CPU, its model and thread
count) -- so a model can refuse a machine it was not trained for while ignoring the hostname.
`device_fingerprint` reads those keys for the torch device a GEMM runs on (the selector's).
"""

from __future__ import annotations

import hashlib
import json

IDENTITY_KEYS = (
    "gpu_name",
    "sm_count",
    "shared_memory_per_block_optin",
    "compute_capability",
    "cuda_version",
    "hip_version",
    "torch_version",
    "triton_version",
)
CPU_IDENTITY_KEYS = ("cpu", "threads")

# Datasheet peaks used as features (leads, not measurements): dense tensor-core FLOP/s by
# dtype and HBM bandwidth. Matched on a substring of the device name.
DEVICE_PEAKS = {
    "H200": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "tf32": 494.7}, "mem_bandwidth_gbs": 4800.0},
    "H100": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "tf32": 494.7}, "mem_bandwidth_gbs": 3350.0},
    "A100": {"peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5, "tf32": 156.0}, "mem_bandwidth_gbs": 2039.0},
    "MI300X": {"peak_tflops": {"bf16": 1307.0, "fp16": 1307.0, "fp32": 163.0}, "mem_bandwidth_gbs": 5300.0},
    "MI355X": {"peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp32": 157.0}, "mem_bandwidth_gbs": 8000.0},
}


def fingerprint_id(fp: dict) -> str:
    """16 hex digits over the identity keys (the CPU's only where the fingerprint has them)."""
    ident = {k: fp.get(k) for k in IDENTITY_KEYS}
    ident.update({k: fp[k] for k in CPU_IDENTITY_KEYS if k in fp})
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def device_peaks(gpu_name: str) -> dict:
    for tag, peaks in DEVICE_PEAKS.items():
        if tag in (gpu_name or ""):
            return peaks
    return {"peak_tflops": {}, "mem_bandwidth_gbs": 0.0}


# (device type, index) -> its fingerprint, for GPUs only (a GPU's cannot change in a process)
_GPU_FINGERPRINTS: dict = {}


def device_fingerprint(device) -> dict:
    """What identifies the device a GEMM runs on: name + SM count for GPUs (what the cost
    model's check_device compares) and a short id over name, SMs and software versions.
    A GPU's is computed once per process (it cannot change; a CPU's thread count can)."""
    key = (getattr(device, "type", str(device)), getattr(device, "index", None))
    if key in _GPU_FINGERPRINTS:
        return dict(_GPU_FINGERPRINTS[key])
    fp = _device_fingerprint(device)
    if fp.get("gpu_name") and key[1] is not None:  # "cuda" alone follows the current device
        _GPU_FINGERPRINTS[key] = dict(fp)
    return fp


def _device_fingerprint(device) -> dict:
    import platform

    import torch

    fp: dict = {"device_type": getattr(device, "type", str(device)), "torch_version": torch.__version__}
    if fp["device_type"] == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        fp.update(
            {
                "gpu_name": props.name,
                "sm_count": props.multi_processor_count,
                "shared_memory_per_block_optin": int(getattr(props, "shared_memory_per_block_optin", 0)),
                "compute_capability": f"{props.major}.{props.minor}",
                "cuda_version": torch.version.cuda,
                "hip_version": getattr(torch.version, "hip", None),
            }
        )
        try:
            import triton

            fp["triton_version"] = triton.__version__
        except ImportError:
            pass
    else:
        fp.update({"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads()})
    fp["fingerprint_id"] = fingerprint_id(fp)
    return fp
