"""The cost model's ATen-kernel columns at selection time: what cuBLAS launches for this GEMM.

A model trained with these columns (selector/model/features.py, ATEN_KERNEL_COLUMNS) reads them
for each GEMM it ranks. On a CUDA device the first decision for a problem runs ATen's call once
under torch.profiler (kernels/aten/launched.py, ~10-20 ms) and remembers the facts for the
process; anywhere the probe cannot run -- no CUDA, ROCm, a profiler or a CUDA-graph capture
already running, operands over half the free GPU memory -- the columns stay missing (NaN), which
the trees route by their default direction, and the decision goes on without them.
"""

from __future__ import annotations

import logging
import threading
from typing import Mapping

from kselect.kernels.aten.launched import ProbeError, probe, record_facts
from kselect.kernels.problem import Problem

log = logging.getLogger(__name__)


class AtenKernelFacts:
    """Per-process memo of each problem's ATen-kernel facts (None where they cannot be read)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._facts: dict[str, dict | None] = {}
        self._lock = threading.Lock()
        self._told: set[str] = set()  # reasons already logged, so a reason is said once

    def __call__(self, problem: Problem) -> Mapping[str, float] | None:
        if not self.enabled:
            return None
        with self._lock:
            if problem.key in self._facts:
                return self._facts[problem.key]
        facts = self._read(problem)
        with self._lock:
            self._facts[problem.key] = facts
        return facts

    def _read(self, problem: Problem) -> dict | None:
        try:
            return record_facts(probe(problem), problem)  # probe() refuses where it cannot run
        except Exception as exc:  # noqa: BLE001 -- no probe, no columns: the decision goes on without them
            reason = type(exc).__name__ + (f": {exc}" if isinstance(exc, ProbeError) else "")
            if reason not in self._told:
                self._told.add(reason)
                log.info("kselect: ATen's kernel not read for %s (%s); its columns stay missing", problem.key, exc)
            return None
