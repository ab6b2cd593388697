"""The decider: one GEMM's decision, as named steps -- the cache key -> a decision cached before ->
rank -> keep (the policy, with verify's price on compiles) -> record -- returned as a `Decision`.
A dynamic M repeats it per size and keeps the union (`decide_per_size`, its rules in
decide/dynamic_sizes.py). Measuring what is kept, and picking the winner, are the verifier's
(selector/verify/verifier.py)."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import NamedTuple, Sequence

import numpy as np

from kselect.kernels.epilogue import NO_EPILOGUE
from kselect.selector.compat import choice_candidates, torch_release
from kselect.selector.decide.cache import decision_key
from kselect.selector.decide.candidate_sets import aten_indices, candidate_keys, is_aten, unseen_backends
from kselect.selector.decide.dynamic_sizes import dynamic_m_sizes, round_robin, within
from kselect.selector.decide.gap_policy import nearest_candidates
from kselect.selector.decide.grouped_ranker import for_problem
from kselect.selector.decide.policy import choose_kept, with_fusing_few
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.decide.switch_interval import short_switch_interval
from kselect.selector.logs import log_decision
from kselect.selector.ops import registry as op_kinds

log = logging.getLogger("kselect.selector")


class Decision(NamedTuple):
    """One GEMM's decision: the indices of its candidates kept, and its decision-cache entry
    ((key, key fields, candidate keys); None without a cache, or for a dynamic M's union,
    whose one measured size cannot settle the others)."""

    kept: list[int]
    entry: tuple | None


class Decider:
    """Decisions for one configuration (config.SelectorSettings), each a value: `decide` over a
    GEMM's candidates, `decide_per_size` for a dynamic M. Asks `rankers` (DeviceRankers) for a
    device's ranker and `pricing` (CompilePricing) for verify's price on compiles; reads and
    writes `cache` (a DecisionCache, or None); writes what it decided into `record`
    (selector/record.py). Remembers, per thread, what a GEMM's templates stage kept for its
    choices stage to come."""

    def __init__(self, config, rankers, pricing, cache, record):
        self.config, self.rankers, self.pricing, self.cache, self.record = config, rankers, pricing, cache, record
        self._decision_fields = config.decision_fields()  # in every decision's cache key
        self._local = threading.local()

    def spent_setup(self, ms: float) -> None:
        """This thread loaded or warmed a ranker before deciding (`setup_ms` of its next record)."""
        self._local.setup_ms = getattr(self._local, "setup_ms", 0.0) + ms

    def decide(
        self,
        stage: str,
        problem,
        fields: dict,
        fingerprint: dict,
        candidates: Sequence,
        epilogue: bool = False,
        mapped: tuple[float, float] = (0.0, 0.0),
        early: bool = False,
        map_parts: dict | None = None,
        as_planned: bool = False,
        gemm_epilogue=None,
    ) -> Decision:
        """The Decision over `candidates` (the indices kept, the cache entry); raises RankerUnavailable
        when this GEMM must go to stock Inductor. `epilogue` (True, or "fused":
        hook.Selector._read_epilogue): the kept set holds the epilogue's few (policy.with_fusing_few).
        `gemm_epilogue`: the Epilogue read from the lowering (None:
        not read, or none follows the GEMM), which a ranker that `reads_epilogue` ranks with and
        its decision's cache key then holds. `as_planned`: the candidates are the set this GEMM's templates
        stage kept, so all are kept (see planned_covers). The recorded ms is the whole decision (keys, cache lookup,
        ranking, policy; not the one-time model load) plus `mapped` (wall, thread CPU seconds
        the hook spent before: reading the GEMM and mapping Inductor's choices to candidates,
        or enumerating them for an `early` decision: map_ms; `map_parts`, that time taken apart, joins
        the recorded phases); cpu_ms is this thread's CPU time."""
        # the first call loads the model: not timed; a grouped GEMM's is the grouped model joined to it
        ranker = for_problem(self.rankers.ranker_for(fingerprint), problem)
        t0, c0 = time.perf_counter(), time.thread_time()
        map_s, map_cpu_s = mapped
        keys = candidate_keys(candidates)  # a tuple; the same object per size class (early)
        key_fields = self._key_fields(stage, fields, fingerprint, keys, ranker, epilogue, as_planned)
        # its scores (a ranker that reads it) or its pick (timed fused) depend on the epilogue: so does the key
        if getattr(ranker, "reads_epilogue", False) or epilogue == "fused":
            key_fields["gemm_epilogue"] = (gemm_epilogue or NO_EPILOGUE).as_dict()
        measured = self._measured_pick(fingerprint, problem, keys, candidates, epilogue, as_planned)
        if measured is not None:
            key_fields["measured_picks"] = measured[0]  # the table it came from
        key = entry = None  # without a cache nothing reads the key (~0.5 ms of hashing saved)
        if self.cache is not None:
            key = decision_key(key_fields)
            entry = (key, key_fields, keys)
            kept = self._cache_hit(stage, problem, key, keys)
            if kept is not None:
                return Decision(kept, entry)
        t_rank = time.perf_counter()
        scores = None
        if as_planned:
            t_ranked = time.perf_counter()
            kept, why = list(range(len(candidates))), "verify: the templates stage's kept set, as is"
        elif measured is not None and measured[1] is not None:
            t_ranked = time.perf_counter()
            kept, why = [measured[1]], f"predict: measured on this card -> {keys[measured[1]]} (models/picks)"
        else:
            scores, reach = self._rank(ranker, problem, candidates, gemm_epilogue)
            t_ranked = time.perf_counter()
            kept, why = self._keep(ranker, fingerprint, problem, candidates, scores, epilogue, reach)
        self._plan(stage, problem, keys, kept)
        t_end = time.perf_counter()
        ms = (t_end - t0 + map_s) * 1e3
        cpu_ms = (time.thread_time() - c0 + map_cpu_s) * 1e3
        # where the decision's wall time went: reading + mapping/enumerating, keys + cache lookup,
        # ranking (featurise + trees when the ranker says), policy (choose_kept)
        phases = {
            "map": map_s * 1e3,
            **(map_parts or {}),
            "key_cache": (t_rank - t0) * 1e3,
            "rank": (t_ranked - t_rank) * 1e3,
            **getattr(ranker, "last_phases_ms", dict)(),
            "policy": (t_end - t_ranked) * 1e3,
        }
        self._record(stage, problem, keys, kept, why, scores, early, ms, cpu_ms, map_s * 1e3, phases)
        if self.cache is not None:
            self.cache.put_later(key, [keys[i] for i in kept], key_fields)
        return Decision(kept, entry)

    def _measured_pick(self, fingerprint: dict, problem, keys, candidates, epilogue, as_planned) -> tuple | None:
        """Predict with the card's measured picks (the `measured_picks` setting): (the table's
        digest, the index of the measured pick among `candidates`, or None where the table does
        not hold this GEMM or its pick is not a candidate here). None where they do not apply: another
        mode, the setting off, no table for this card, a GEMM with an epilogue (the table
        measured it bare) or the templates stage's set as planned."""
        config = self.config
        if config.mode != "predict" or not config.measured_picks or epilogue or as_planned:
            return None
        digest, picks = self.rankers.measured_picks(fingerprint)
        if not picks:
            return None
        pick = picks.get(problem.key)
        if pick is None or pick not in keys:  # `keys`: the candidates' keys, made once per size class
            return digest, None
        i = keys.index(pick)
        return digest, (None if candidates[i].template in torch_release.broken_templates(problem) else i)

    def _key_fields(self, stage: str, fields: dict, fingerprint: dict, keys, ranker, epilogue, as_planned) -> dict:
        """What the decision depends on: its decision-cache key's fields."""
        # the settings this mode decides by (config.SelectorSettings' `decides`): a changed
        # policy must not reuse the old policy's decisions
        key_fields = {
            "stage": stage,
            "device": fingerprint["fingerprint_id"],
            "problem": fields,
            **self._decision_fields,
            "candidates": keys,
            "ranker": getattr(ranker, "ident", type(ranker).__name__),
        }
        if epilogue:  # True: the few handed over; "fused": picked on the fused forms
            key_fields["epilogue"] = epilogue
        if self.config.mode == "verify":
            priced = self.pricing.key_field(fingerprint)  # the budget and the model that priced it
            if priced is not None:
                key_fields["compile_budget"] = priced
            if as_planned:
                key_fields["as_planned"] = True
        return key_fields

    def _cache_hit(self, stage: str, problem, key: str, keys) -> list[int] | None:
        """The indices a cached decision kept (all still among the candidates), or None."""
        cached = self.cache.get(key)
        if cached is not None and set(cached) <= set(keys):
            self.record.stats["cache_hits"] += 1
            log_decision("kselect %s %s: decision cache hit -> kept %s", stage, problem.key, cached)
            kept = [keys.index(k) for k in cached]
            self._plan(stage, problem, keys, kept)
            return kept
        return None

    def _rank(self, ranker, problem, candidates, gemm_epilogue=None) -> tuple[np.ndarray, tuple | None]:
        """(The ranker's scores (lower = predicted faster), verify's budget: the reach model's
        gaps and tiers, or None where the ranker has no reach model or the mode is predict). A
        ranker that `reads_epilogue` (a cost model trained with the epilogue block) gets the
        GEMM's Epilogue too."""
        epilogue = {"epilogue": gemm_epilogue or NO_EPILOGUE} if getattr(ranker, "reads_epilogue", False) else {}
        reach = getattr(ranker, "reach", None) if self.config.mode == "verify" else None
        with short_switch_interval():
            if reach is not None:
                scores, gaps = ranker.rank_with_reach(problem, candidates, **epilogue)
                return np.array(scores, dtype=np.float64), (gaps, reach.tiers)
            return np.array(ranker.rank(problem, candidates, **epilogue), dtype=np.float64), None

    def _keep(self, ranker, fingerprint: dict, problem, candidates, scores: np.ndarray, epilogue: bool, reach=None):
        """(kept indices, the reason): the policy over the scores (and verify's budget, `reach`:
        _rank's); templates this torch cannot run are never kept (their scores become NaN in
        place)."""
        config = self.config
        if config.mode == "predict" and problem.dtype not in getattr(ranker, "predict_dtypes", (problem.dtype,)):
            return self._cublas_only(problem, candidates)
        bad = torch_release.broken_templates(problem)
        broken = [i for i, c in enumerate(candidates) if c.template in bad] if bad else []
        scores[broken] = np.nan  # never kept
        unseen = [i for i in unseen_backends(candidates, ranker) if i not in broken]
        price = self.pricing.price(fingerprint, problem, candidates, priced=op_kinds.of(problem).compile_priced)
        kept, why = choose_kept(
            candidates,
            scores,
            config.mode,
            config.k,
            config.keep_aten,
            bool(getattr(ranker, "log_time_scores", False)),
            unseen,
            fusion_candidate=epilogue and config.mode == "verify",
            adaptive=config.adaptive_k,
            min_k=config.min_k,
            aten_margin=config.aten_margin,
            compile_price=price,
            aten_gap=bool(getattr(ranker, "aten_gap_scores", False)),
            nearest=nearest_candidates(ranker, config.mode, problem, candidates),
            reach=reach,
        )
        # the epilogue's few, picked on their fused forms: Inductor's benchmark (epilogue_fusion) or kselect's
        if epilogue == "fused" or (epilogue and config.epilogue_fusion):
            none_in_reach = reach is not None and all(is_aten(candidates[i]) for i in kept)
            return with_fusing_few(candidates, scores, kept, why, config.keep_aten, none_in_reach)
        return kept, why

    @staticmethod
    def _cublas_only(problem, candidates) -> tuple[list[int], str]:
        """Predict for a dtype its model may not predict templates for (held-out predict capture
        below zero; the sidecar's `predict_dtypes`): ATen alone, plain's kernel, nothing tuned."""
        aten = aten_indices(candidates)
        if len(aten) == 0:
            raise RankerUnavailable(
                f"predict-{problem.dtype}",
                f"kselect: predict keeps cuBLAS for {problem.dtype}, but ATen is not a choice here -- stock autotuning",
            )
        return [int(aten[0])], f"predict: {problem.dtype} is decided in verify only by its model -> ATen (cuBLAS)"

    def _record(self, stage, problem, keys, kept, why, scores, early, ms, cpu_ms, map_ms, phases) -> None:
        """The decision in the record's stats and `decisions`, and in the log (the scores too
        at debug level; `scores` None: kept as planned, nothing ranked)."""
        self.record.stats["decisions"] += 1
        # cpu_ms: this thread's CPU time; wall well above it = the thread waited (GIL, preemption)
        # the model load and graph warm-up this thread did before deciding (not in ms; once each)
        setup_ms, self._local.setup_ms = getattr(self._local, "setup_ms", 0.0), 0.0
        self.record.decisions.append(
            {
                "stage": stage,
                "problem": problem.key,
                "seen": len(keys),
                "kept": [keys[i] for i in kept],
                "ms": ms,
                "cpu_ms": cpu_ms,
                "map_ms": map_ms,
                "why": why,
                "early": early,
                "phases_ms": phases,
                "setup_ms": round(setup_ms, 3),
            }
        )
        log_decision(
            "kselect %s %s: %d candidates seen, kept %d (%s) in %.1f ms; chosen %s",
            stage,
            problem.key,
            len(keys),
            len(kept),
            f"{why}; early: over kselect's enumeration, before Inductor generates" if early else why,
            ms,
            [keys[i] for i in kept],
        )
        if log.isEnabledFor(logging.DEBUG) and scores is not None:
            for i in sorted(range(len(keys)), key=lambda i: (scores[i] != scores[i], scores[i])):
                log.debug("  score %10.4f %s%s", scores[i], keys[i], "  KEPT" if i in kept else "")

    def _plan(self, stage: str, problem, keys, kept) -> None:
        """Remember (this thread) what the templates stage kept for this GEMM; its choices
        stage comes next in the same thread."""
        if stage == "templates":
            self._local.planned = (problem.key, frozenset(keys[i] for i in kept))

    def planned_covers(self, problem, cands) -> bool:
        """Verify's choices stage over exactly what its templates stage kept (no choice added
        outside the KTC path): that set is decided, so it is measured as is.

        Why: ranking the kept set again with the same adaptive rule cut it further -- the rule's
        spread is 0.5 standard deviations of the scores it sees, and a few kept choices plus
        ATen spread wider than the whole space. The one-layer decode's lm_head kept four tile
        families and measured two. Held out (reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/dev-cpu/two_pass_eval.py,
        404 shapes), the second pass took the default from 94.39 % of the best to 93.88 %
        (oracle shapes 93.04 -> 91.32 %, within 1 % 60.4 -> 51.9 %), hardly above top-1's 93.79."""
        planned = getattr(self._local, "planned", None)
        self._local.planned = None
        return (
            self.config.mode == "verify"
            and planned is not None
            and planned[0] == problem.key
            and {c.key for c in cands} <= planned[1]
        )

    def decide_per_size(
        self,
        stage: str,
        problem,
        fields: dict,
        fingerprint: dict,
        candidates,
        items,
        epilogue: bool = False,
        mapped: tuple[float, float] = (0.0, 0.0),
        stock_size=None,
        gemm_epilogue=None,
    ) -> Decision:
        """A GEMM whose M is dynamic: the ranker decides at each size of `dynamic_m_sizes` (no
        benchmark: scores only), and what is kept is the union of those picks: each size's
        first pick, then each size's second, ...; never more than `stock_size()` (how many
        choices stock Inductor would tune), the ATen safety net kept if any size kept it.

        Where Inductor generated choices per size (multi-kernel dispatch: each choice carries
        the size it was built for, `hint_override`), each size's choices are decided at that
        size and Inductor's dispatch picks among them per size; otherwise the union is the list
        Inductor tunes at its hint. `gemm_epilogue`: as `decide`'s, the same at every size. Verify measures that list once, as any kept set, and caches
        no verified winner (one measured size cannot settle the others)."""
        groups: dict = {}
        for i, item in enumerate(items):
            groups.setdefault(choice_candidates.hint_override_of(item), []).append(i)
        at = lambda m: dataclasses.replace(problem, M=int(m))  # noqa: E731
        if set(groups) != {None}:  # Inductor's own per-size choices: each decided at its size
            plan = [(problem.M if h is None else h, idx) for h, idx in groups.items()]
        else:
            plan = [(m, list(range(len(candidates)))) for m in dynamic_m_sizes(problem.M)]
        per_size, picks = {}, []
        for n, (m, idx) in enumerate(plan):
            sub = [candidates[i] for i in idx]
            picked, _ = self.decide(
                stage,
                at(m),
                {**fields, "m_size": m},
                fingerprint,
                sub,
                epilogue=epilogue,
                mapped=mapped if n == 0 else (0.0, 0.0),
                gemm_epilogue=gemm_epilogue,
            )
            per_size[m] = [sub[i].key for i in picked]
            picks.append([idx[i] for i in picked])
        kept = round_robin(picks)
        if len(kept) > 1 and stock_size is not None:
            kept = within(kept, stock_size(), candidates)
        keys = candidate_keys(candidates)
        self._plan(stage, problem, keys, kept)
        self.record.dynamic_picks.append(
            {
                "stage": stage,
                "problem": problem.key,
                "per_size": per_size,
                "by_inductor_size": set(groups) != {None},
                "kept": [keys[i] for i in kept],
            }
        )
        log_decision(
            "kselect %s %s: dynamic M, picks per size %s -> kept %d of %d",
            stage,
            problem.key,
            per_size,
            len(kept),
            len(candidates),
        )
        return Decision(kept, None)
