"""Epilogue-aware verification: a GEMM whose output feeds pointwise ops is not judged alone.

Why: kselect times each kept choice as a bare GEMM. Inductor can fuse a following pointwise
op (bias, residual add, SwiGLU's mul, a cast) into a Triton template's store, but never into
an ATen (cuBLAS) call, which then needs a separate kernel that re-reads the GEMM's output.
On the H200 that separate kernel is what made verify's decode step 1.16x slower than stock
DEFAULT (reports/2026-12-02-e2e-h200): ATen won each bare GEMM by ~3 %, DEFAULT's templates won the step.
Stock Inductor settles this by compiling and timing fused kernels in the scheduler; we price
it instead, from first principles, when the kept set is measured:

    unfused cost = ATen GEMM + one extra kernel (a fixed launch/drain cost) + writing and
                   re-reading the GEMM's output through HBM (2 * outputs * bytes / bandwidth).

So a template wins when  template_ms < extern_ms + epilogue_saving_ms. The fixed cost is an
estimate (a minimal elementwise kernel plus its launch gap on an H100/H200-class GPU, a few
microseconds); reports/2026-12-02-e2e-h200 records what it buys end to end.
"""

from __future__ import annotations

import math
from typing import Sequence

from kselect.kernels.candidate import Candidate

# A separate small pointwise kernel: its launch gap plus a minimal run, H100/H200 class.
EPILOGUE_KERNEL_MS = 0.003
# When the device's bandwidth is unknown: a high figure (H200's 4.8 TB/s) prices the saved
# traffic low, so an unknown device leans toward the measured bare-GEMM winner.
FALLBACK_BANDWIDTH_GBS = 4800.0


def fuses_epilogue(c: Candidate | None) -> bool:
    """Choices Inductor can fuse a pointwise epilogue into: Triton GEMM templates that store
    their own tile (decompose-k ends in a reduction, extern calls in a library)."""
    return c is not None and c.backend == "triton" and c.template in ("mm", "persistent_tma")


def epilogue_saving_ms(problem, bandwidth_gbs: float | None = None) -> float:
    """What fusing the epilogue saves over running it as its own kernel after the GEMM."""
    bw = float(bandwidth_gbs or 0) or FALLBACK_BANDWIDTH_GBS
    outputs = float(problem.batch) * problem.M * problem.N
    return EPILOGUE_KERNEL_MS + 2.0 * outputs * problem.dtype_bytes / (bw * 1e9) * 1e3


def effective_ms(ms: Sequence[float], candidates: Sequence[Candidate | None], saving_ms: float) -> list[float]:
    """Bare-GEMM times -> times including the epilogue: choices that cannot fuse it pay saving_ms."""
    return [t if (not math.isfinite(t) or fuses_epilogue(c)) else t + saving_ms for t, c in zip(ms, candidates)]
