"""verify's half of one GEMM: a decision and its choices in, the choices Inductor gets out -- the
winner alone where kselect measured the kept set itself.

Room by room: measure the kept set (kselect's own harness, selector/verify/timing.py, or
Inductor's benchmark), pick the winner (a template replaces ATen only beyond the noise of its
rounds, verify/pick.py), and cache the verdict for both stages of the GEMM (what a benchmark of
Inductor's settles: verify/verified_winners.py). A GEMM handed over with its epilogue's few (the
epilogue_fusion option) is left to Inductor, whose pick settles the cache either way; one with
an activation epilogue under time_fused is picked on its fused forms (verify/fused_forms.py).

The `Verifier` owns the cache entries waiting for a benchmark; the decision cache and the
Selector's record (selector/record.py) are handed to it."""

from __future__ import annotations

import functools
import logging
import math
import threading
import time

from kselect.selector.compat import autotune, choice_candidates, fused_timing, multi_template
from kselect.selector.decide.cache import decision_key
from kselect.selector.logs import log_decision
from kselect.selector.ops import registry as op_kinds
from kselect.selector.verify.fused_forms import read_fused
from kselect.selector.verify.pick import VerifyTimingUnavailable
from kselect.selector.verify.timing import measure as measure_kept
from kselect.selector.verify.verified_winners import verified_keep
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")

PENDING_CAP = 4096  # kept sets awaiting a benchmark, at most (benchmarks that never report: failed compiles)


class Verifier:
    """verify for one configuration (config.SelectorSettings: `mode`, `verify_timing`,
    `release_memory`, `warm_while_compiling`, `compile_in`), writing verdicts into `cache` (a
    DecisionCache, or None) and what it measured into `record`; `pricing` (CompilePricing) gives
    the predicted compiles a measurement records; `warm_start` the workers' warm-up, or None."""

    def __init__(self, config, cache, record, pricing, warm_start=None):
        self.config, self.cache, self.record, self.pricing, self.warm_start = config, cache, record, pricing, warm_start
        self._pending: dict = {}  # {ids of a kept set: (cache entries it settles, by the scheduler's pick)}
        self._lock = threading.Lock()
        self._local = threading.local()  # the templates stage's entry, for its choices stage (same thread)

    def verify(self, stage: str, problem, decision, items: list, device_type: str, epilogue=False) -> list:
        """The choices Inductor gets for `decision` (its `kept` indices into `items`, its cache
        `entry`): with more than one kept, at the choices stage, measure them (kselect's
        harness) and hand Inductor the winner alone; else leave the set to Inductor's benchmark
        (ATen timed under a CUDA graph where it can be) and await the timings that settle the
        cached decision. `epilogue` True (the epilogue's few, either mode): the set goes to
        Inductor, whose epilogue-fusion benchmark (GPUs) or autotune (CPU) picks, and that pick
        is cached; "fused" (time_fused, an activation epilogue), where kselect times the set:
        its fused forms (verify/fused_forms.py), else as True. The kept set as is in every
        other case."""
        out, entry = [items[i] for i in decision.kept], decision.entry
        settles = (self.config.mode == "verify" or epilogue) and len(out) > 1
        verifying_set = settles and stage == "choices"
        if verifying_set and epilogue == "fused" and self.times_itself(device_type):
            handed = self._verify_fused(problem, entry, out, device_type)
            if handed is not None:
                return handed  # else (one warning) the few go to Inductor's own benchmark, below
        # an op kind verify cannot time itself (a grouped GEMM: its few go to Inductor's
        # benchmark, on its own offsets; kselect's harness builds a plain GEMM's operands)
        own_harness = op_kinds.of(problem).verify_times_itself
        if verifying_set and not epilogue and own_harness and self.times_itself(device_type):
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
            self.await_verification(stage, problem.key, (*entry, faithful), out, by_fusion=by_fusion)
        return out

    def times_itself(self, device_type: str) -> bool:
        """Verify with our harness ("kselect") or Inductor's benchmark ("inductor"); "auto" = ours
        on GPUs, where Inductor misreads ATen, Inductor's on the CPU, where it does not."""
        if self.config.verify_timing == "auto":
            return device_type == "cuda"
        return self.config.verify_timing == "kselect"

    # -- kselect's own measurement ---------------------------------------------------
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
                release_memory=self.config.release_memory,
                warm_while_compiling=self.config.warm_while_compiling,
                compile_in=self.config.compile_in,
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
        self.record.stats["measured"] += len(kept_items)
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
        self.record.measurements.append(record)
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
            self.await_verification("choices", problem.key, (*entry, True), kept_items)
            self.record_verified(kept_items, dict(zip(kept_items, got.ms)), device_type, winner=kept_items[best])
        return [kept_items[best]]

    def _verify_fused(self, problem, entry, kept_items: list, device_type: str) -> list | None:
        """The choices to hand Inductor for a GEMM with an activation epilogue (time_fused): the
        kept set measured bare, handed over with those times, Inductor's scheduler picking on the
        fused forms kselect times (verify/fused_forms.py); None (one warning): Inductor's own
        benchmark picks among them."""
        if not fused_timing.available():
            warn_once(
                "fused-timing:unavailable",
                "kselect: this torch lacks the fused-form hooks; Inductor's epilogue benchmark picks",
            )
            return None
        got = self._measure_set(problem, kept_items, device_type)
        if got is None:
            return None
        measured, record = got
        ok = [c for c, t in zip(kept_items, measured.ms) if math.isfinite(t)]
        if not multi_template.defers_to_fusion_benchmark(ok, device_type):  # one left, or no template
            return self._settle_measured(problem, entry, kept_items, measured, device_type)
        record["fused_ms"] = readings = {}  # filled as the scheduler reads them, after the lowering
        fused_timing.hand_over(
            ok,
            {id(c): t for c, t in zip(kept_items, measured.ms) if math.isfinite(t)},
            functools.partial(read_fused, readings, device_type),
        )
        if entry is not None:
            self.await_verification("choices", problem.key, (*entry, True), ok, by_fusion=True)
        return ok

    # -- verdicts: the kept sets waiting for a measurement, and the winner cached ----------
    def await_verification(self, stage: str, problem_key: str, entry, kept_items, by_fusion: bool = False) -> None:
        """Remember which cache entries Inductor's benchmark of `kept_items` will settle. The
        templates stage runs first for a GEMM, in the same thread, then its choices stage.
        `by_fusion`: the set becomes Inductor's multi-template buffer, whose scheduler picks
        after benchmarking the epilogue fused (`record_fusion_pick`); its bare-GEMM timings
        settle nothing."""
        local = self._local
        if stage == "templates":
            local.templates = (problem_key, entry)
            return
        entries = [entry]
        tp = getattr(local, "templates", None)
        if tp is not None and tp[0] == problem_key:
            entries.append(tp[1])
        local.templates = None
        with self._lock:
            if len(self._pending) > PENDING_CAP:
                self._pending.clear()
            self._pending[tuple(id(c) for c in kept_items)] = (entries, by_fusion)

    def record_fusion_pick(self, choices: list, chosen, device_type: str) -> None:
        """Inductor's scheduler finalised the multi-template buffer of a kept set handed over with
        its epilogue's few (compat/multi_template.py): `chosen` -- a template, fused with its
        epilogue or not, or ATen with the epilogue as its own kernel -- is cached, so the next
        compile hands Inductor that one choice and nothing is benchmarked again."""
        self.record_verified(list(choices), {}, device_type, winner=chosen)

    def record_verified(self, kept_items: list, timings: dict, device_type: str, winner=None) -> None:
        """verify mode: the kept set was measured; cache its winner, so the next compile of this
        GEMM keeps that one choice and benchmarks nothing. `winner` is the choice kselect's own
        measurement picked (by its noise rule, verify/pick.py); without it (Inductor benchmarked
        the set) the winner is verified_keep's reading of `timings`.

        Both stages' entries get it: the choices-stage entry of the set measured now; the
        templates-stage entry of the same problem, narrowed to the verified templates (a winner
        built outside the KTC path, e.g. ATen addmm on the GPU, is not a template); and, since
        that narrowed templates entry shrinks what the next compile's choices stage sees, the
        choices-stage entry of exactly that smaller set (verified templates + every choice
        built outside the KTC path), or the next compile would miss it and benchmark again."""
        key = tuple(id(c) for c in kept_items)
        with self._lock:
            waiting = self._pending.get(key)
            if waiting is None or (waiting[1] and winner is None):  # the scheduler's pick settles it
                return
            del self._pending[key]
        pend = waiting[0]
        if self.cache is None:
            return
        measured = {}
        for choice, t in timings.items():
            cand = choice_candidates.caller_candidate(choice)
            if cand is not None:
                measured[cand] = min(float(t), measured.get(cand, math.inf))
        if winner is not None:
            chosen = choice_candidates.caller_candidate(winner)
            keep = [chosen] if chosen is not None else []
        else:
            keep = verified_keep(measured, device_type, aten_faithful=bool(pend[0][3]))
        if not keep:
            return
        kept = [c.key for c in keep]
        (ckey, cfields, ckeys, _), *templates = pend
        if not set(kept) <= set(ckeys):  # measured choices this stage never saw: cache nothing
            return
        self.cache.put_later(ckey, kept, {**cfields, "verified": True})
        for tkey, tfields, tkeys, _ in templates:  # this GEMM's templates stage (same problem)
            kept_t = [k for k in kept if k in tkeys]
            if not kept_t:  # the winner is built outside the KTC path: templates keep their decision
                continue
            self.cache.put_later(tkey, kept_t, {**tfields, "verified": True})
            # what the next compile's choices stage sees: these templates + the non-KTC choices
            seen = sorted(set(kept_t) | {k for k in ckeys if k not in tkeys})
            if len(seen) > 1 and seen != sorted(ckeys):
                nfields = {**cfields, "candidates": seen}
                self.cache.put_later(decision_key(nfields), kept, {**nfields, "verified": True})
        self.record.stats["verified"] += 1
        log_decision(
            "kselect verified %s: %d kept choices measured; cached %s",
            cfields.get("problem", {}).get("out"),
            len(measured),
            kept,
        )


def _compiles_by_key(compiles: dict, keys: list[str]) -> dict:
    """verify_timing's compile record with each kept template named by its candidate key."""
    if not compiles:
        return {}
    return {**compiles, "per_choice": {keys[i]: t for i, t in compiles["per_choice"].items()}}
