"""What verify caches once the kept set was measured: the winner, unless ATen's time may be
misread (`verified_keep`); the Selector's side of it (`VerifiedWinners`): which cache entries a
measurement of a kept set settles, and writing the winner into each."""

from __future__ import annotations

import math
from typing import Mapping

from kselect.kernels.candidate import Candidate
from kselect.selector.compat import choice_candidates
from kselect.selector.decide.cache import decision_key
from kselect.selector.decide.candidate_sets import is_aten
from kselect.selector.logs import log_decision

# Inductor's autotune times cuBLAS up to 1.57x slower than it really runs on the H200
# (reports/2026-12-02-faithfulness-h200); Triton choices it times within ~6%.
ATEN_MISREAD_GPU = 1.6


def verified_keep(
    measured: Mapping[Candidate, float], device_type: str, aten_faithful: bool = False
) -> list[Candidate]:
    """What verify mode caches after Inductor benchmarked the kept set: its winner, unless the
    winner could be an artefact of Inductor mis-timing ATen on a GPU (ATen within the known
    misread factor, and ATen not timed under a CUDA graph) -- then both stay, and the next
    compile measures just those two."""
    finite = {c: t for c, t in measured.items() if t == t and t != math.inf and t > 0}
    if not finite:
        return []
    best = min(finite, key=finite.get)
    if device_type == "cpu" or aten_faithful or is_aten(best):
        return [best]
    aten = [c for c in finite if is_aten(c)]
    if aten and min(finite[c] for c in aten) <= finite[best] * ATEN_MISREAD_GPU:
        return [best, min(aten, key=finite.get)]
    return [best]


class VerifiedWinners:
    """Each kept set waiting for its measurement, and its winner cached for both stages of the
    GEMM. Reads the Selector's `cache`, `stats`, `_lock`, `_local` and `_pending`."""

    def _await_verification(self, stage: str, problem_key: str, entry, kept_items, by_fusion: bool = False) -> None:
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
            if len(self._pending) > 4096:  # benchmarks that never reported (failed compiles)
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
        self.stats["verified"] += 1
        log_decision(
            "kselect verified %s: %d kept choices measured; cached %s",
            cfields.get("problem", {}).get("out"),
            len(measured),
            kept,
        )
