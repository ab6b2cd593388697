"""Pricing a kept template's compile (verify): the policy's `CompilePrice`, and the selector's
compile-cost model per GPU target that predicts it (selector/model/compile_time_model.py).

Held out: docs/selector-design.md, "What a kept template costs to compile".
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.selector.config import DEFAULTS
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")


# verify: another kept template may be predicted to compile at most this many times as long as
# the top-1 (or the median compile); 0 = no pricing. Held out: docs/selector-design.md. The default of
# the compile_budget setting (config.SelectorSettings)
COMPILE_BUDGET = DEFAULTS.compile_budget


class CompilePrice:
    """Verify's price on a kept template's compile. The kept templates compile in parallel,
    so a GEMM's measurement waits for the slowest (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3); the ranker's
    top-1 is compiled whatever happens (predict would compile it too), so another kept template
    may cost at most `budget` times the top-1's predicted compile -- or the typical compile's,
    when the top-1 is quicker than that. `predict(indices) -> ms` (NaN: unknown, never passed
    over); `typical_ms`: the median compile in the same unit.

    Held out: docs/selector-design.md, "What a kept template costs to compile"."""

    def __init__(self, predict: Callable[[Sequence[int]], np.ndarray], typical_ms: float, budget: float):
        if not budget > 0:
            raise ValueError(f"compile budget must be > 0, got {budget}")
        self.predict, self.typical_ms, self.budget = predict, float(typical_ms), float(budget)
        self.passed: list[int] = []

    def too_slow_after(self, top: int) -> Callable[[int], bool]:
        """The test for candidates after `top` (which is always kept)."""
        top_ms = float(self.predict([top])[0])
        limit = self.budget * max(top_ms if top_ms == top_ms else 0.0, self.typical_ms)

        def too_slow(i: int) -> bool:
            ms = float(self.predict([i])[0])
            if ms > limit:  # NaN compares False: unknown costs are not passed over
                self.passed.append(i)
                return True
            return False

        return too_slow


def passed_over_note(candidates: Sequence[Candidate], passed: Sequence[int]) -> str:
    """The reason's note on the templates the compile price passed over (the first three named)."""
    slow = list(dict.fromkeys(candidates[i].key for i in passed))  # a candidate may be tried twice
    more = f" and {len(slow) - 3} more" if len(slow) > 3 else ""
    return f"; passed over {len(slow)} slow to compile ({', '.join(slow[:3])}{more})"


class CompilePricing:
    """The compile-cost models, one per CUDA target, loaded once, for one configuration (its
    `mode` and `compile_budget`): the price on a verify decision's kept templates (the decider's),
    and the predicted compiles a measurement record carries (the verifier's)."""

    def __init__(self, mode: str, budget: float):
        self.mode, self.budget = mode, budget
        self._models: dict = {}  # {sm_XY: the compile-cost model, or None}
        self._lock = threading.Lock()

    @property
    def on(self) -> bool:
        """Whether verify prices kept templates' compiles at all (mode and budget)."""
        return self.mode == "verify" and bool(self.budget)

    def price(self, fingerprint: dict, problem, candidates, priced: bool = True) -> CompilePrice | None:
        """verify: the price on kept templates' compiles for this GEMM, or None (budget off, not
        a CUDA GPU, no compile-cost model for its target, or an op kind it does not price
        (`priced` False, selector/ops/: the grouped GEMM, whose template the model does not
        know): verify keeps as before)."""
        if not self.on or not priced:
            return None
        model = self.model_for(fingerprint)
        if model is None:
            return None
        return CompilePrice(
            lambda idx: model.predict_for(problem, [candidates[i] for i in idx]), model.typical_ms, self.budget
        )

    def key_field(self, fingerprint: dict) -> list | None:
        """What a verify decision's cache key holds of its pricing: the budget and which
        compile-cost model priced it (None: unpriced); None without pricing."""
        if not self.on:
            return None
        model = self.model_for(fingerprint)
        return [self.budget, (getattr(model, "metadata_", None) or {}).get("dataset_hash") if model else None]

    def model_for(self, fingerprint: dict):
        """The shipped compile-cost model for the GPU's CUDA target, loaded once (None: none;
        a broken one warns once and is not used)."""
        cc = fingerprint.get("compute_capability")
        if fingerprint.get("device_type") != "cuda" or not cc or fingerprint.get("hip_version"):
            return None
        arch = "sm_" + str(cc).replace(".", "")
        with self._lock:
            if arch not in self._models:
                from kselect.selector.model.compile_time_model import shipped_compile_cost
                from kselect.selector.model.cost_model import ModelError

                try:
                    self._models[arch] = shipped_compile_cost(arch)
                except ModelError as exc:
                    warn_once(
                        f"compile-cost:{arch}",
                        f"kselect: compile-cost model unusable ({exc}); "
                        "verify keeps templates without pricing their compiles",
                    )
                    self._models[arch] = None
            return self._models[arch]

    def predicted_ms(self, problem, cands) -> dict:
        """{key: ms} the loaded compile-cost model predicts for the kept templates ({} without a
        model), recorded so every GPU run also checks the price against the measured compiles."""
        model = next((m for m in self._models.values() if m is not None), None)
        if model is None:
            return {}
        try:
            ms = model.predict_for(problem, cands)
        except Exception:  # noqa: BLE001 -- a record, never worth a failed measurement
            log.debug("kselect: compile-cost prediction for the record failed", exc_info=True)
            return {}
        return {c.key: round(float(t), 1) for c, t in zip(cands, ms) if t == t and t > 0}
