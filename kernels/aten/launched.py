"""What ATen launches for a GEMM: cuBLAS's own kernel choice, read from its kernel names.

cuBLAS picks a kernel by heuristics (tile, pipeline depth, cluster, split-K with a reduction
kernel) without timing anything; where its pick is poor for a shape -- a deep pipeline over a
short K, a split-K reduction on a tiny problem -- a Triton template can beat it. The cost model
reads these facts as features (selector/model/features.py, ATEN_KERNEL_COLUMNS).

`probe` runs the ATen candidate once under torch.profiler (CUDA only, never while the user's
own profiler runs) and returns the launched kernels' names; `kernel_facts` turns names into
numbers. On Hopper the cuBLAS of torch 2.11+cu130 names its kernels
`nvjet_sm90_tst_<A>x<B>_<K>x<stages>_<ca>x<cb>_<h|v>...`, with `cutlass...`, `gemv...` and
`splitKreduce...` kernels beside them; an unparsed name leaves its tile columns at 0.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Sequence

from kselect.kernels.problem import Problem

log = logging.getLogger(__name__)

ATEN_KERNEL_COLUMNS: tuple[str, ...] = (
    "aten_kernels_per_call",
    "aten_split_k",
    "aten_memset",
    "aten_nvjet",
    "aten_tile_a",
    "aten_tile_b",
    "aten_tile_k",
    "aten_stages",
    "aten_cluster_a",
    "aten_cluster_b",
    "aten_coop",
    "aten_ctas_log2",
    "aten_k_iters_over_stages",
)

_NVJET_TILE = re.compile(r"tst_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([hv])")
PROBE_CALLS = 3
# the probe's operands may take at most this share of the device's free memory; above it the
# problem is not probed (its columns stay missing) rather than risk the user's memory
MAX_SHARE_OF_FREE = 0.5
# after operands this large the probe gives their cached blocks back to the device
RELEASE_BYTES = 256 * 2**20


class ProbeError(RuntimeError):
    """ATen's launches could not be read here (no CUDA, a profiler already running, ...)."""


def _main_kernel(names: Sequence[str]) -> str:
    for name in names:
        if name.startswith("nvjet") or "cutlass" in name or "gemv" in name or "gemm" in name:
            return name
    return names[0] if names else ""


def kernel_facts(names: Sequence[str], per_call: float, M: int, N: int, K: int) -> dict[str, float]:
    """ATEN_KERNEL_COLUMNS for one call's kernel names (`per_call`: kernels launched per call)."""
    names = list(names)
    if not names:
        raise ValueError("no kernel names: the probe saw no launch")
    main = _main_kernel(names)
    tile = _NVJET_TILE.search(main)
    ta, tb, tk, stages, ca, cb = (int(tile.group(i)) for i in range(1, 7)) if tile else (0, 0, 0, 0, 0, 0)
    ctas = math.ceil(N / ta) * math.ceil(M / tb) if tile else 0
    facts = {
        "aten_kernels_per_call": float(per_call),
        "aten_split_k": float("splitK" in main or any("splitKreduce" in n for n in names)),
        "aten_memset": float(any("Memset" in n or "memset" in n for n in names)),
        "aten_nvjet": float(main.startswith("nvjet")),
        "aten_tile_a": float(ta),
        "aten_tile_b": float(tb),
        "aten_tile_k": float(tk),
        "aten_stages": float(stages),
        "aten_cluster_a": float(ca),
        "aten_cluster_b": float(cb),
        "aten_coop": float("coopA" in main) + 2.0 * float("coopB" in main),
        "aten_ctas_log2": math.log2(max(ctas, 1)),
        "aten_k_iters_over_stages": (math.ceil(K / tk) / stages) if tile and stages else 0.0,
    }
    assert tuple(facts) == ATEN_KERNEL_COLUMNS
    return facts


def record_facts(record: dict, problem: Problem) -> dict[str, float]:
    """kernel_facts of a probe record ({"kernels": [...], "per_call": n}, as `probe` returns)."""
    per_call = float(record["per_call"])
    names = record["kernels"][: max(1, round(per_call))]
    return kernel_facts(names, per_call, problem.M, problem.N, problem.K)


def operand_bytes(problem: Problem) -> int:
    """Bytes of A, B, the output and a bias for one call of `problem`."""
    b = problem.batch if problem.op == "bmm" else 1
    elems = b * (problem.M * problem.K + problem.K * problem.N + problem.M * problem.N) + problem.N
    return elems * problem.dtype_bytes


def probe_possible() -> str | None:
    """None when `probe` can run here, else why not."""
    import torch

    if not torch.cuda.is_available() or torch.version.cuda is None:
        return "no CUDA device (the probe reads cuBLAS's kernels)"
    if torch._C._autograd._profiler_enabled():
        return "a profiler is already running"
    if torch.cuda.is_current_stream_capturing():
        return "a CUDA graph is being captured"
    return None


def probe(problem: Problem, operands=None) -> dict:
    """{"kernels": names in launch order over PROBE_CALLS calls, "per_call": kernels per call}
    of ATen's call for `problem` on the current CUDA device (one warm-up call first)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from kselect.kernels.aten.backend import AtenBackend
    from kselect.kernels.operands import make_operands

    why = probe_possible()
    if why:
        raise ProbeError(why)
    need = operand_bytes(problem)
    if operands is None:
        free, _ = torch.cuda.mem_get_info()
        if need > MAX_SHARE_OF_FREE * free:
            raise ProbeError(f"its operands need {need / 2**30:.2f} GiB of {free / 2**30:.2f} GiB free")
    backend = AtenBackend()
    ops = operands if operands is not None else make_operands(problem, "cuda")
    run = backend.runner(backend.compile(backend.candidates(problem)[0], problem), ops)
    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(PROBE_CALLS):
            run()
        torch.cuda.synchronize()
    del run, ops
    if operands is None and need > RELEASE_BYTES:
        torch.cuda.empty_cache()
    events = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda e: e.time_range.start
    )
    names = [e.name for e in events]
    if not names:
        raise ProbeError("the profiler recorded no CUDA kernel")
    return {"kernels": names, "per_call": len(names) / PROBE_CALLS}
