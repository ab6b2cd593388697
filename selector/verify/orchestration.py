"""verify's orchestration around a decision: measure the kept set (kselect's own harness,
selector/verify/timing.py, or Inductor's benchmark), pick the winner (a template replaces ATen
only beyond the noise of its rounds, verify/pick.py), and hand the verdict to the decision cache
(selector/verify/verified_winners.py). A GEMM handed over with its epilogue's few (the
epilogue_fusion option) is left to Inductor, whose pick settles the cache either way; one with
an activation epilogue under time_fused is picked on its fused forms (verify/fused_forms.py)."""

from __future__ import annotations

import logging
import time

from kselect.selector.compat import autotune, choice_candidates, multi_template
from kselect.selector.logs import log_decision
from kselect.selector.ops import registry as op_kinds
from kselect.selector.verify.pick import VerifyTimingUnavailable
from kselect.selector.verify.timing import measure as measure_kept
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")


class VerifyOrchestration:
    """The kept set measured and its winner picked. Reads the Selector's `mode`, `verify_timing`,
    `warm_start`, `release_memory`, `warm_while_compiling`, `compile_in`, `stats` and
    `measurements`; awaits and records verdicts through VerifiedWinners."""

    def _verify_kept(self, stage: str, problem, entry, out: list, device_type: str, epilogue: bool = False) -> list:
        """What verify does with a kept set of more than one choice: at the choices stage, measure
        it (kselect's harness) and hand Inductor the winner alone; else leave the set to
        Inductor's benchmark (ATen timed under a CUDA graph where it can be) and await the
        timings that settle the cached decision. `epilogue` True (the epilogue's few, either mode):
        the set goes to Inductor, whose epilogue-fusion benchmark (GPUs) or autotune (CPU)
        picks, and that pick is cached; "fused" (time_fused, an activation epilogue), where
        kselect times the set: its fused forms (verify/fused_forms.py), else as True.
        `out` as is in every other case."""
        settles = (self.mode == "verify" or epilogue) and len(out) > 1
        verifying_set = settles and stage == "choices"
        if verifying_set and epilogue == "fused" and self._times_itself(device_type):
            handed = self._verify_fused(problem, entry, out, device_type)  # verify/fused_forms.py
            if handed is not None:
                return handed  # else (one warning) the few go to Inductor's own benchmark, below
        # an op kind verify cannot time itself (a grouped GEMM: its few go to Inductor's
        # benchmark, on its own offsets; kselect's harness builds a plain GEMM's operands)
        own_harness = op_kinds.of(problem).verify_times_itself
        if verifying_set and not epilogue and own_harness and self._times_itself(device_type):
            picked = self._measure_kept(problem, entry, out, device_type)
            if picked is not None:
                return picked
        faithful = False
        if verifying_set and device_type == "cuda" and own_harness:
            try:
                faithful = autotune.time_extern_under_cuda_graphs(out)
            except Exception as exc:  # noqa: BLE001 -- only timing quality is at stake
                warn_once(
                    f"graph-timing:{type(exc).__name__}",
                    f"kselect: cannot time ATen under CUDA graphs ({exc}); its verify verdicts use the misread margin",
                )
        if settles and entry is not None:
            by_fusion = epilogue and stage == "choices" and multi_template.defers_to_fusion_benchmark(out, device_type)
            self._await_verification(stage, problem.key, (*entry, faithful), out, by_fusion=by_fusion)
        return out

    def _times_itself(self, device_type: str) -> bool:
        """Verify with our harness ("kselect") or Inductor's benchmark ("inductor"); "auto" = ours
        on GPUs, where Inductor misreads ATen, Inductor's on the CPU, where it does not."""
        if self.verify_timing == "auto":
            return device_type == "cuda"
        return self.verify_timing == "kselect"

    def _measure_kept(self, problem, entry, kept_items, device_type: str):
        """Time the kept choices with the collector's harness (selector/verify/timing.py) and
        hand Inductor the winner alone; None (one warning) leaves the set to Inductor."""
        got = self._measure_set(problem, kept_items, device_type)
        if got is None:
            return None
        return self._settle_measured(problem, entry, kept_items, got[0], device_type)

    def _measure_set(self, problem, kept_items, device_type: str):
        """(Measured, its record in `measurements`) of the kept choices, timed bare by the
        collector's harness; None (one warning) when it cannot measure them."""
        t0 = time.perf_counter()
        if self.warm_start is not None:
            self.warm_start.start()  # the last chance for the workers' warm-up: a pool that came up late
        try:
            got = measure_kept(
                kept_items,
                problem.dtype,
                device_type,
                release_memory=self.release_memory,
                warm_while_compiling=self.warm_while_compiling,
                compile_in=self.compile_in,
            )
            best = got.best  # raises VerifyTimingUnavailable when nothing ran and matched ATen
        except VerifyTimingUnavailable as exc:
            log.info("kselect verify %s: Inductor benchmarks the kept set: %s", problem.key, exc)
            warn_once(
                "verify-timing:unavailable",
                f"kselect: verify cannot measure this set itself ({exc}); Inductor benchmarks it",
            )
            return None
        except Exception as exc:  # noqa: BLE001 -- only timing quality is at stake
            warn_once(
                f"verify-timing:{type(exc).__name__}",
                f"kselect: verify measurement failed ({type(exc).__name__}: {exc}); Inductor benchmarks this set",
            )
            log.debug("kselect verify measurement failure", exc_info=True)
            return None
        wall_ms = (time.perf_counter() - t0) * 1e3
        cands = [choice_candidates.caller_candidate(it) for it in kept_items]
        # best: a template replaces ATen only when faster beyond the noise of its rounds (Measured.winner)
        keys = [c.key for c in cands]
        self.stats["measured"] += len(kept_items)
        record = {
            "problem": problem.key,
            "ms": dict(zip(keys, got.ms)),
            "winner": keys[best],
            "wall_ms": wall_ms,
            "method": got.method,
            "compiled_in": got.compiled_in,
            "phases_ms": {k: round(v, 3) for k, v in got.phases_ms.items()},
            "compiles": _compiles_by_key(got.compiles, keys),
            "memory_mb": dict(got.memory_mb),
            "dropped": {keys[i]: why for i, why in got.dropped.items()},
            "stats": {keys[i]: st for i, st in got.stats.items()},
            "rounds": {keys[i]: r for i, r in got.rounds.items()},
        }
        predicted = self.pricing.predicted_ms(problem, cands)
        if predicted:  # what the price expected, beside the compiles measured above
            record["predicted_compile_ms"] = predicted
        self.measurements.append(record)
        log_decision(
            "kselect verify %s: measured %s (%s) in %.0f ms -> %s",
            problem.key,
            ", ".join(f"{k}={t:.4f}ms" for k, t in zip(keys, got.ms)),
            got.method,
            wall_ms,
            keys[best],
        )
        return got, record

    def _settle_measured(self, problem, entry, kept_items, got, device_type: str) -> list:
        """Cache the measured winner (a template only beyond ATen's noise) and hand it alone."""
        best = got.best
        if entry is not None:
            self._await_verification("choices", problem.key, (*entry, True), kept_items)
            self.record_verified(kept_items, dict(zip(kept_items, got.ms)), device_type, winner=kept_items[best])
        return [kept_items[best]]


def _compiles_by_key(compiles: dict, keys: list[str]) -> dict:
    """verify_timing's compile record with each kept template named by its candidate key."""
    if not compiles:
        return {}
    return {**compiles, "per_choice": {keys[i]: t for i, t in compiles["per_choice"].items()}}
