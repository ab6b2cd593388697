"""What ATen launches for a GEMM: cuBLAS's own kernel choice, read from its kernel names.

cuBLAS picks a kernel by heuristics (tile, pipeline depth, cluster, split-K with a reduction
kernel) without timing anything; where its pick is poor for a shape -- a deep pipeline over a
short K, a split-K reduction on a tiny problem -- a Triton template can beat it. The cost model
reads these facts as features (selector/model/features.py, ATEN_KERNEL_COLUMNS).

`probe` returns the kernels ATen's call launches; `kernel_facts` turns names into numbers. It
reads them without a profiler: the call is captured in a CUDA graph, never launched, and the
graph's debug dump names its kernel and memset nodes (`reader="graph"`). The first probe used
torch.profiler (`reader="profiler"`, kept to cross-check the graph reader), which attaches CUPTI;
Kineto leaves it attached when the profile ends unless the process started with
TEARDOWN_CUPTI=1 (pytorch/pytorch#144455), and on an H100 that slowed every later small GEMM of
the process 2-6 % (reports/2026-12-06-aten-probe-cupti). KSELECT_ATEN_PROBE=graph|profiler picks
the reader.

On Hopper the cuBLAS of torch 2.11+cu130 names its kernels
`nvjet_sm90_tst_<A>x<B>_<K>x<stages>_<ca>x<cb>_<h|v>...`, with `cutlass...`, `gemv...` and
`splitKreduce...` kernels beside them; an unparsed name leaves its tile columns at 0.
"""

from __future__ import annotations

import logging
import math
import re
import warnings
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


READERS = ("graph", "profiler")


def default_reader() -> str:
    """The reader KSELECT_ATEN_PROBE names, else "graph"."""
    import os

    reader = os.environ.get("KSELECT_ATEN_PROBE", "graph").strip().lower() or "graph"
    if reader not in READERS:
        raise ProbeError(f"KSELECT_ATEN_PROBE={reader!r}: expected one of {', '.join(READERS)}")
    return reader


def probe(problem: Problem, operands=None, reader: str | None = None) -> dict:
    """{"kernels": names in launch order over PROBE_CALLS calls, "per_call": kernels per call}
    of ATen's call for `problem` on the current CUDA device (one warm-up call first)."""
    import torch

    from kselect.kernels.aten.backend import AtenBackend
    from kselect.kernels.operands import make_operands

    reader = reader or default_reader()
    if reader not in READERS:
        raise ValueError(f"unknown ATen probe reader {reader!r}; expected one of {', '.join(READERS)}")
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
    try:
        names = _read_graph(run) if reader == "graph" else _read_profiler(run)
    finally:
        del run, ops
        if operands is None and need > RELEASE_BYTES:
            torch.cuda.empty_cache()
    if not names:
        raise ProbeError(f"the {reader} reader saw no CUDA kernel")
    return {"kernels": names, "per_call": len(names) / PROBE_CALLS, "reader": reader}


def _read_graph(run) -> list[str]:
    """The kernel and memset nodes of PROBE_CALLS calls captured in one CUDA graph, in capture
    order. The capture is thread-local (other threads' CUDA calls go on) and runs on a side stream
    after a warm-up call there, so cuBLAS picks as it does outside a graph; the graph is never
    instantiated or launched."""
    import tempfile

    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:  # kept, not instantiated: the dump reads the captured graph (enable_debug_mode would
        # keep every later graph of the process too)
        graph = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        raise ProbeError("this torch's CUDAGraph cannot keep a captured graph (keep_graph)") from None
    with torch.cuda.stream(stream):
        run()
        stream.synchronize()
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            for _ in range(PROBE_CALLS):
                run()
        finally:
            graph.capture_end()
    try:
        with tempfile.TemporaryDirectory(prefix="kselect-aten-probe-") as tmp:
            path = f"{tmp}/aten.dot"
            with warnings.catch_warnings():  # torch warns "DEBUG: calling debug_dump()" per dump
                warnings.filterwarnings("ignore", message=".*debug_dump|.*cudaGraphDebugDotPrint")
                graph.debug_dump(path)
            with open(path, errors="replace") as fh:
                text = fh.read()
    finally:
        graph.reset()
    return dot_launches(text)


# a DOT node statement's label; the dump escapes quotes inside it
_DOT_LABEL = re.compile(r'label\s*=\s*"((?:[^"\\]|\\.)*)"')
_DOT_KIND = re.compile(r"\b(KERNEL|MEMSET|MEMCPY|HOST|EMPTY|WAIT_EVENT|EVENT_RECORD|MEM_ALLOC|MEM_FREE|CONDITIONAL)\b")
_LAUNCH_SYNTAX = re.compile(r"([A-Za-z_][\w:$.]*)\s*(?:\\?<){3}")  # name<<<grid>>> (maybe escaped)
_KERNEL_NAME = re.compile(r"\b(nvjet_\w+|_Z\w+|\w*(?:gemm|gemv|cutlass|splitK|Kernel|kernel)\w*)")


def dot_launches(text: str) -> list[str]:
    """Kernel names (as the dump writes them; mangled C++ names stay mangled) and "Memset" for
    memset nodes, in node order, from a CUDA graph's verbose DOT dump."""
    names = []
    for match in _DOT_LABEL.finditer(text):
        label = match.group(1)
        kind = _DOT_KIND.search(label)
        launch = _LAUNCH_SYNTAX.search(label)
        if kind is not None and kind.group(1) == "MEMSET":
            names.append("Memset (Device)")  # the name torch.profiler gives a memset
        elif launch is not None or (kind is not None and kind.group(1) == "KERNEL"):
            named = launch or _KERNEL_NAME.search(label, kind.end())
            names.append(named.group(1) if named else "")
    return names


def _read_profiler(run) -> list[str]:
    """The CUDA activity of PROBE_CALLS calls under torch.profiler, in launch order. CUPTI stays
    attached afterwards unless the process started with TEARDOWN_CUPTI=1: setting it in-process
    before the profile stops did not tear it down (an H100, reports/2026-12-06-aten-probe-cupti)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(PROBE_CALLS):
            run()
        torch.cuda.synchronize()
    events = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda e: e.time_range.start
    )
    return [e.name for e in events]
