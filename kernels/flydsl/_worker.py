"""Compile-worker process: `python -m kselect.kernels.flydsl._worker` (started by compile.py).

Reads one JSON request per stdin line ({"params", "arch", "dump_dir", "result"}), compiles
that kernel with CPU placeholder tensors under COMPILE_ONLY (set by the parent), writes
{"compile_s"} or {"error"} to the request's result file and answers "done" on the protocol
channel. FlyDSL's own prints go to stderr so they can never corrupt the protocol. If LLVM
aborts, this process dies with the signal and the parent reports that one request as crashed.
torch and flydsl are imported once per worker, not once per kernel.
"""

import os
import sys
import time


def _fault(kind: str) -> None:
    """Testing hook (KSELECT_FLYDSL_WORKER_FAULT): fail like a crashing or hanging LLVM."""
    if kind == "abort":
        os.abort()
    if kind == "hang":
        time.sleep(3600)


def compile_request(req: dict) -> dict:
    import torch

    from kselect.kernels.flydsl import gemm_kernel
    from kselect.kernels.flydsl.params import KernelParams

    p = KernelParams(**req["params"])
    dtype = torch.float16 if p.dtype == "fp16" else torch.bfloat16
    # Placeholders only carry shape/stride/dtype into the JIT; COMPILE_ONLY never launches.
    a = torch.empty(p.M, p.K, dtype=dtype)
    b = torch.empty((p.N, p.K) if p.layout == "nt" else (p.K, p.N), dtype=dtype)
    c = torch.empty(p.M, p.N, dtype=torch.float32 if p.SPLIT_K > 1 else dtype)
    os.environ["FLYDSL_DUMP_DIR"] = req["dump_dir"]  # FlyDSL reads it at each compile
    t0 = time.perf_counter()
    try:
        gemm_kernel.kselect_gemm(c, a, b, gemm_kernel.make_param(p, req["arch"]))
    except Exception as exc:  # a DSL/MLIR error: the parent records the candidate as failed
        lines = str(exc).strip().splitlines()
        return {
            "error": f"{type(exc).__name__}: {lines[0] if lines else ''}"[:500],
            "compile_s": time.perf_counter() - t0,
        }
    return {"compile_s": time.perf_counter() - t0}


def serve() -> int:
    from kselect.kernels.compile_worker import serve as serve_requests
    from kselect.kernels.flydsl import options

    fault = options.get("worker_fault")
    return serve_requests(compile_request, lambda: _fault(fault))


if __name__ == "__main__":
    sys.exit(serve())
