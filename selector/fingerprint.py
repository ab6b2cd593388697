"""What identifies the machine a kernel time belongs to, written once for datasets, models and
the selector's decision cache.

`fingerprint_id` hashes only what changes kernel timings -- GPU model, SM count, shared memory,
compute capability, CUDA/HIP, torch and triton versions (and, for a CPU, its model and thread
count) -- so a model can refuse a machine it was not trained for while ignoring the hostname.
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
    "H200": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0}, "mem_bandwidth_gbs": 4800.0},
    "H100": {"peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0}, "mem_bandwidth_gbs": 3350.0},
    "A100": {"peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5}, "mem_bandwidth_gbs": 2039.0},
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
