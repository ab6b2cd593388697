"""The Inductor plug-in: prune max-autotune's GEMM choices with a ranker, cache decisions.

Two hook points, both in inductor/compat/ (the only package touching private Inductor API):
- `_finalize_template_configs` (an InductorChoices subclass) sees the KTC-based templates
  (ATen, Triton mm / persistent TMA / decompose-k) BEFORE code generation -- where pruning
  saves most on the GPU;
- a preprocessing function sees every backend's ChoiceCallers (CPP, CUTLASS, ... are
  appended outside the KTC path) after codegen; one choice left = nothing benchmarked.
Both ask `Selector.select`, which maps choices to Candidates, consults the decision cache,
else a Ranker + the policy, and returns what to keep. Any failure -> the stock list and one
warning per cause: kselect can make a compile slower to tune, never wrong or crashed.
On ROCm the handler also lets FlyDSL join mm/addmm (flydsl_join.py), ranked with the rest.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import math
import operator
import threading
import time
import weakref
from typing import Sequence

import numpy as np

from kselect.selector.config import SETTINGS, SelectorSettings, keyword_help
from kselect.selector.config import read as read_options
from kselect.selector.decide.cache import DecisionCache, candidate_set_digest, decision_key
from kselect.selector.decide.candidate_sets import candidate_keys, unseen_backends
from kselect.selector.decide.gap_policy import nearest_candidates
from kselect.selector.decide.policy import choose_kept
from kselect.selector.decide.rankers import CostModelRanker, RankerUnavailable
from kselect.selector.decide.switch_interval import short_switch_interval
from kselect.selector.fingerprint import device_fingerprint
from kselect.selector.inductor.compat import (
    autotune,
    choice_candidates,
    current_graph,
    dynamo_callbacks,
    enumeration,
    inductor_settings,
    signatures,
    template_configs,
    torch_release,
)
from kselect.selector.inductor.epilogue import effective_ms, epilogue_saving_ms
from kselect.selector.inductor.flydsl_join import FlyDSLJoin
from kselect.selector.logs import log_decision, register_with_torch_logs
from kselect.selector.model.compile_price import CompilePrice
from kselect.selector.verify.timing import VerifyTimingUnavailable
from kselect.selector.verify.timing import measure as measure_kept
from kselect.selector.verify.verified_winners import verified_keep
from kselect.selector.warmup.triton_setup import WarmStart
from kselect.selector.warn import reset_warnings, warn_once

log = logging.getLogger("kselect.selector")

# the sizes a dynamic M is ranked at where Inductor sets no `multi_kernel_hints`: decode-sized
# to prefill-sized row counts, a factor of 4 apart
DYNAMIC_M_SIZES = (16, 64, 256, 1024, 4096)


class Selector:
    """One configuration (mode, k, ranker source, cache). Holds no Inductor state itself."""

    def __init__(self, mode: str = "verify", **settings):
        """`mode` and the other keywords of config.SelectorSettings, checked there (SettingError
        naming a bad one). Each setting reads as an attribute (`sel.k`, `sel.mode`)."""
        self.config = config = SelectorSettings.from_keywords(mode=mode, **settings)
        # Triton's set-up and the compile workers' warm-up, begun as a compile starts
        # (selector/warmup/triton_setup.py); verify's templates in workers need warm workers
        self.warm_start = (
            WarmStart()
            if config.mode != "off"
            and (config.warm_start or (config.compile_in == "workers" and config.mode == "verify"))
            else None
        )
        self._compile_models: dict = {}
        self.cache = DecisionCache(config.cache_dir) if config.cache_dir else None
        self._decision_fields = config.decision_fields()  # in every decision's cache key
        self._rankers: dict = {}
        self._lock = threading.Lock()
        self._warmed_graphs = weakref.WeakSet()  # graphs whose GEMMs the ranker was warmed for
        self._warmed_default = False  # the graph-less warm-up ran (once per process)
        self.stats = {"decisions": 0, "cache_hits": 0, "fallbacks": 0, "verified": 0, "measured": 0}
        # the GEMM search space stock Inductor would use when enable() widened it (see _stock_items)
        self.stock_space: str | None = None
        # the latest decisions (stage, problem, kept keys, ms), for benchmarks and debugging
        self.decisions: collections.deque = collections.deque(maxlen=1024)
        # verify mode: kselect's own measurements of kept sets (problem, {key: ms}, winner, wall ms)
        self.measurements: collections.deque = collections.deque(maxlen=1024)
        # dynamic-M GEMMs: the picks per size and the union kept (stage, problem, per_size, kept)
        self.dynamic_picks: collections.deque = collections.deque(maxlen=1024)
        # verify mode: the cache entries waiting for Inductor's benchmark of the kept set
        self._pending: dict = {}
        self._local = threading.local()
        self.flydsl = FlyDSLJoin()

    @property
    def warm_start_on(self) -> bool:
        """The warm_start setting (the `warm_start` attribute is the warm-up itself, or None)."""
        return self.config.warm_start

    def settings(self) -> dict:
        """The keywords that make this configuration again (enable(**settings()))."""
        return self.config.keywords()

    # -- compile-cost model per device -------------------------------------------------
    def compile_price(self, fingerprint: dict, problem, candidates) -> CompilePrice | None:
        """verify: the price on kept templates' compiles for this GEMM, or None (budget off, not
        a CUDA GPU, or no compile-cost model for its target: verify keeps as before)."""
        if self.mode != "verify" or not self.compile_budget:
            return None
        model = self._compile_model(fingerprint)
        if model is None:
            return None
        return CompilePrice(
            lambda idx: model.predict_for(problem, [candidates[i] for i in idx]), model.typical_ms, self.compile_budget
        )

    def _compile_model(self, fingerprint: dict):
        """The shipped compile-cost model for the GPU's CUDA target, loaded once (None: none;
        a broken one warns once and is not used)."""
        cc = fingerprint.get("compute_capability")
        if fingerprint.get("device_type") != "cuda" or not cc or fingerprint.get("hip_version"):
            return None
        arch = "sm_" + str(cc).replace(".", "")
        with self._lock:
            if arch not in self._compile_models:
                from kselect.selector.model.compile_cost import shipped_compile_cost
                from kselect.selector.model.cost_model import ModelError

                try:
                    self._compile_models[arch] = shipped_compile_cost(arch)
                except ModelError as exc:
                    warn_once(
                        f"compile-cost:{arch}",
                        f"kselect: compile-cost model unusable ({exc}); "
                        "verify keeps templates without pricing their compiles",
                    )
                    self._compile_models[arch] = None
            return self._compile_models[arch]

    # -- ranker per device ------------------------------------------------------------
    def ranker_for(self, fingerprint: dict):
        """The ranker for this device; raises RankerUnavailable (remembered) if there is none."""
        if self.ranker is not None:
            return self.ranker
        fid = fingerprint["fingerprint_id"]
        with self._lock:
            if fid not in self._rankers:
                try:
                    self._rankers[fid] = self._load_model_ranker(fingerprint)
                except RankerUnavailable as exc:
                    self._rankers[fid] = exc
            got = self._rankers[fid]
        if isinstance(got, Exception):
            raise got
        return got

    def _load_model_ranker(self, fingerprint: dict):
        from kselect.selector.model.cost_model import CostModel, ModelError, load_shipped

        try:
            if isinstance(self.model, CostModel):
                model = self.model
            elif self.model:
                model = CostModel.load(self.model)
            elif fingerprint.get("gpu_name"):
                model = load_shipped(fingerprint=fingerprint)
            else:
                raise RankerUnavailable(
                    "no-gpu",
                    f"kselect: no cost model for {fingerprint.get('device_type')} "
                    "devices (models rank GPU kernels) -- stock autotuning",
                )
        except ModelError as exc:
            raise RankerUnavailable("model", f"kselect: cannot use cost model: {exc} -- stock autotuning") from None
        model.set_threads(1)
        ranker = CostModelRanker(model, fingerprint)
        ranker.check()
        return ranker

    def _load_ranker(self, fingerprint: dict) -> tuple[float, float]:
        """Load this device's ranker if not yet (once per process; raises RankerUnavailable) and
        warm it for the graph being lowered (once per graph); returns the (wall, thread CPU)
        seconds that took, which are not the decision's: like the model load, they are reported
        apart (the decision records them as `setup_ms`). Called before the candidates are mapped
        or enumerated, since the warm-up also fills the memos those use -- the first decision of
        a process otherwise enumerated cold (map 17.6 ms on the H200, reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels). Verify's
        compile-cost model loads here too (~20 ms once), not in a decision."""
        t0, c0 = time.perf_counter(), time.thread_time()
        if self.warm_start is not None and not self.warm_start.started:
            self.warm_start.start()  # the last chance: CUDA was not in use as the compile began
        self._warm_for_graph(self.ranker_for(fingerprint))
        if self.mode == "verify" and self.compile_budget:
            self._compile_model(fingerprint)
        took = time.perf_counter() - t0, time.thread_time() - c0
        self._local.setup_ms = getattr(self._local, "setup_ms", 0.0) + took[0] * 1e3
        return took

    def _warm_for_graph(self, ranker) -> None:
        """Warm `ranker` (CostModelRanker.warm_up) for the GEMMs of the graph Inductor is lowering,
        at its first GEMM: a decode graph then encodes only its small size class, not the large
        one it never uses (reports/2026-12-05-ranker-load-dev-cpu). Once per graph; with no graph in sight,
        or none of its GEMMs readable, the default warm-up, once per process. A failure costs
        only the first decisions' latency."""
        warm_up = getattr(ranker, "warm_up", None)
        if warm_up is None:
            return
        graph = current_graph.lowering_graph()
        with self._lock:
            if graph is not None:
                try:
                    if graph in self._warmed_graphs:
                        return
                    self._warmed_graphs.add(graph)
                except TypeError:  # cannot be weakly referenced: as if no graph were in sight
                    graph = None
            problems = []
            if graph is not None:
                try:
                    problems = current_graph.graph_gemm_problems(graph)
                except Exception as exc:  # noqa: BLE001 -- an unexpected graph: the default warm-up
                    log.debug("kselect: cannot read the graph's GEMMs: %s", exc)
            if not problems and self._warmed_default:
                return
            try:
                space = warm_up(problems or None)  # the candidates it ranked, primed into the hook's caches:
                choice_candidates.prime_ktc_memo(space)  # KTC -> candidate mapping
                candidate_set_digest(c.key for c in space)  # memoises each key's digest
            except Exception as exc:  # noqa: BLE001 -- only the first decisions' latency is at stake
                log.debug("kselect: ranker warm-up failed: %s", exc)
            self._warmed_default |= not problems

    # -- the decision ---------------------------------------------------------------
    def select(
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
    ):
        """(indices of `candidates` to keep, cache entry or None); raises RankerUnavailable
        when this GEMM must go to stock Inductor. `epilogue`: verify keeps a fusing template
        too (policy.choose_kept). `as_planned`: the candidates are the set this GEMM's templates
        stage kept, so all are kept (see _planned_covers). The recorded ms is the whole decision (keys, cache lookup,
        ranking, policy; not the one-time model load) plus `mapped` (wall, thread CPU seconds
        the hook spent before: reading the GEMM and mapping Inductor's choices to candidates,
        or enumerating them for an `early` decision: map_ms; `map_parts`, that time taken apart, joins
        the recorded phases); cpu_ms is this thread's CPU time."""
        ranker = self.ranker_for(fingerprint)  # the first call loads the model: not timed
        t0, c0 = time.perf_counter(), time.thread_time()
        map_s, map_cpu_s = mapped
        keys = candidate_keys(candidates)  # a tuple; the same object per size class (early)
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
        if epilogue:
            key_fields["epilogue"] = True
        if self.mode == "verify":
            if self.compile_budget:  # and which compile-cost model priced it (None: unpriced)
                model = self._compile_model(fingerprint)
                key_fields["compile_budget"] = [
                    self.compile_budget,
                    (getattr(model, "metadata_", None) or {}).get("dataset_hash") if model else None,
                ]
            if as_planned:
                key_fields["as_planned"] = True
        key = entry = None  # without a cache nothing reads the key (~0.5 ms of hashing saved)
        if self.cache is not None:
            key = decision_key(key_fields)
            entry = (key, key_fields, keys)
            cached = self.cache.get(key)
            if cached is not None and set(cached) <= set(keys):
                self.stats["cache_hits"] += 1
                log_decision("kselect %s %s: decision cache hit -> kept %s", stage, problem.key, cached)
                kept = [keys.index(k) for k in cached]
                self._plan(stage, problem, keys, kept)
                return kept, entry
        t_rank = time.perf_counter()
        if as_planned:
            t_ranked = time.perf_counter()
            kept, why = list(range(len(candidates))), "verify: the templates stage's kept set, as is"
        else:
            with short_switch_interval():
                scores = np.array(ranker.rank(problem, candidates), dtype=np.float64)
            t_ranked = time.perf_counter()
            bad = torch_release.broken_templates(problem)
            broken = [i for i, c in enumerate(candidates) if c.template in bad] if bad else []
            scores[broken] = np.nan  # never kept
            unseen = [i for i in unseen_backends(candidates, ranker) if i not in broken]
            price = self.compile_price(fingerprint, problem, candidates)
            kept, why = choose_kept(
                candidates,
                scores,
                self.mode,
                self.k,
                self.keep_aten,
                bool(getattr(ranker, "log_time_scores", False)),
                unseen,
                fusion_candidate=epilogue and self.mode == "verify",
                adaptive=self.adaptive_k,
                min_k=self.min_k,
                aten_margin=self.aten_margin,
                compile_price=price,
                aten_gap=bool(getattr(ranker, "aten_gap_scores", False)),
                nearest=nearest_candidates(ranker, self.mode, problem, candidates),
            )
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
        self.stats["decisions"] += 1
        # cpu_ms: this thread's CPU time; wall well above it = the thread waited (GIL, preemption)
        # the model load and graph warm-up this thread did before deciding (not in ms; once each)
        setup_ms, self._local.setup_ms = getattr(self._local, "setup_ms", 0.0), 0.0
        self.decisions.append(
            {
                "stage": stage,
                "problem": problem.key,
                "seen": len(candidates),
                "kept": [keys[i] for i in kept],
                "ms": ms,
                "cpu_ms": cpu_ms,
                "map_ms": map_s * 1e3,
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
            len(candidates),
            len(kept),
            f"{why}; early: over kselect's enumeration, before Inductor generates" if early else why,
            ms,
            [keys[i] for i in kept],
        )
        if log.isEnabledFor(logging.DEBUG) and not as_planned:
            for i in sorted(range(len(keys)), key=lambda i: (scores[i] != scores[i], scores[i])):
                log.debug("  score %10.4f %s%s", scores[i], keys[i], "  KEPT" if i in kept else "")
        if self.cache is not None:
            self.cache.put_later(key, [keys[i] for i in kept], key_fields)
        return kept, entry

    def record_verified(self, kept_items: list, timings: dict, device_type: str) -> None:
        """verify mode: Inductor measured the kept set; cache its winner (verified_winners.verified_keep),
        so the next compile of this GEMM keeps that one choice and benchmarks nothing.

        Both stages' entries get it: the choices-stage entry of the set measured now; the
        templates-stage entry of the same problem, narrowed to the verified templates (a winner
        built outside the KTC path, e.g. ATen addmm on the GPU, is not a template); and, since
        that narrowed templates entry shrinks what the next compile's choices stage sees, the
        choices-stage entry of exactly that smaller set (verified templates + every choice
        built outside the KTC path), or the next compile would miss it and benchmark again."""
        with self._lock:
            pend = self._pending.pop(tuple(id(c) for c in kept_items), None)
        if pend is None or self.cache is None:
            return
        measured = {}
        for choice, t in timings.items():
            cand = choice_candidates.caller_candidate(choice)
            if cand is not None:
                measured[cand] = min(float(t), measured.get(cand, math.inf))
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

    def _plan(self, stage: str, problem, keys, kept) -> None:
        """Remember (this thread) what the templates stage kept for this GEMM; its choices
        stage comes next in the same thread."""
        if stage == "templates":
            self._local.planned = (problem.key, frozenset(keys[i] for i in kept))

    def _planned_covers(self, problem, cands) -> bool:
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
            self.mode == "verify"
            and planned is not None
            and planned[0] == problem.key
            and {c.key for c in cands} <= planned[1]
        )

    def _guarded(self, stage: str, items, signature, to_candidates, restock=None):
        """Run one decision over `items`; any failure -> the user's own choices (`_stock_items`),
        one warning per cause. `restock(space)`: the templates stage's choices as stock Inductor
        builds them in `space` (the handler regenerates them), for narrowing a fallback."""
        if self.mode == "off" or len(items) <= 1:
            return items
        problem = cands = None
        saving_ms = 0.0
        started = time.perf_counter(), time.thread_time()
        try:
            problem, fields, device = signature()
            fingerprint = device_fingerprint(device)
            try:  # before mapping: the ranker's warm-up primes the mapping
                load, unavailable = self._load_ranker(fingerprint), None
            except RankerUnavailable as exc:
                load, unavailable = (0.0, 0.0), exc
            cands = to_candidates(items)
            if unavailable is not None:  # mapped all the same: the fallback narrows with them
                raise unavailable
            if any(c is None for c in cands):
                raise RankerUnavailable("unmapped", f"kselect: a {stage} choice has no candidate mapping -- stock")
            epilogue = self._prices_epilogue(fingerprint)
            mapped = (time.perf_counter() - started[0] - load[0], time.thread_time() - started[1] - load[1])
            as_planned = stage == "choices" and self._planned_covers(problem, cands)
            if "M" in fields.get("dynamic", ()) and not as_planned:
                stock_size = (
                    (lambda: len(restock(self.stock_space)))
                    if stage == "templates" and restock is not None and self.stock_space
                    else (lambda: len(items))
                )
                kept, entry = self._select_per_size(
                    stage,
                    problem,
                    fields,
                    fingerprint,
                    cands,
                    items,
                    epilogue=epilogue,
                    mapped=mapped,
                    stock_size=stock_size,
                )
            else:
                kept, entry = self.select(
                    stage, problem, fields, fingerprint, cands, epilogue=epilogue, mapped=mapped, as_planned=as_planned
                )
            if epilogue:
                saving_ms = epilogue_saving_ms(problem, self._bandwidth_gbs(fingerprint))
        except RankerUnavailable as exc:
            self.stats["fallbacks"] += 1
            warn_once(exc.cause, str(exc))
            return self._stock_items(stage, items, restock)
        except Exception as exc:  # noqa: BLE001 -- a selector bug must never break a compile
            self.stats["fallbacks"] += 1
            warn_once(
                f"error:{type(exc).__name__}",
                f"kselect: selector failed ({type(exc).__name__}: {exc}) -- stock autotuning",
            )
            log.debug("kselect %s failure", stage, exc_info=True)
            return self._stock_items(stage, items, restock)
        out = [items[i] for i in kept]
        device_type = str(getattr(device, "type", device))
        verifying_set = self.mode == "verify" and len(out) > 1 and stage == "choices"
        if verifying_set and self._times_itself(device_type):
            picked = self._measure_kept(problem, entry, out, device_type, saving_ms)
            if picked is not None:
                return picked
        faithful = False
        if verifying_set and device_type == "cuda":
            try:
                faithful = autotune.time_extern_under_cuda_graphs(out)
            except Exception as exc:  # noqa: BLE001 -- only timing quality is at stake
                warn_once(
                    f"graph-timing:{type(exc).__name__}",
                    f"kselect: cannot time ATen under CUDA graphs ({exc}); its verify verdicts use the misread margin",
                )
        if self.mode == "verify" and entry is not None and len(out) > 1:
            self._await_verification(stage, problem.key, (*entry, faithful), out)
        return out

    def _prices_epilogue(self, fingerprint: dict) -> bool:
        """Verify on a GPU, with epilogue pricing on, for a GEMM whose output feeds pointwise ops
        (selector/inductor/epilogue.py): the decision keeps a fusing template too."""
        return (
            self.epilogue_fusion
            and self.mode == "verify"
            and fingerprint.get("gpu_name") is not None
            and current_graph.output_feeds_pointwise()
        )

    def _times_itself(self, device_type: str) -> bool:
        """Verify with our harness ("kselect") or Inductor's benchmark ("inductor"); "auto" = ours
        on GPUs, where Inductor misreads ATen, Inductor's on the CPU, where it does not."""
        if self.verify_timing == "auto":
            return device_type == "cuda"
        return self.verify_timing == "kselect"

    def _bandwidth_gbs(self, fingerprint: dict) -> float | None:
        """The GPU's memory bandwidth as the cost model's fingerprint records it (or None)."""
        try:
            model_fp = getattr(getattr(self.ranker_for(fingerprint), "model", None), "fingerprint", None)
        except RankerUnavailable:
            return None
        return (model_fp or {}).get("mem_bandwidth_gbs")

    def _measure_kept(self, problem, entry, kept_items, device_type: str, saving_ms: float = 0.0):
        """Time the kept choices with the collector's harness (selector/verify/timing.py) and
        hand Inductor the winner alone; None (one warning) leaves the set to Inductor.

        saving_ms > 0 (the GEMM feeds a pointwise epilogue): choices that cannot fuse it are
        charged the separate epilogue kernel (selector/inductor/epilogue.py) before the winner is taken."""
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
            _ = got.best  # raises VerifyTimingUnavailable when nothing ran and matched ATen
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
        eff = effective_ms(got.ms, cands, saving_ms) if saving_ms else list(got.ms)
        best = min((i for i, t in enumerate(eff) if math.isfinite(t)), key=lambda i: eff[i])
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
        }
        predicted = self._predicted_compile_ms(problem, cands)
        if predicted:  # what the price expected, beside the compiles measured above
            record["predicted_compile_ms"] = predicted
        if saving_ms:
            record["epilogue_saving_ms"] = saving_ms
            record["bare_winner"] = keys[got.best]
        self.measurements.append(record)
        log_decision(
            "kselect verify %s: measured %s (%s) in %.0f ms%s -> %s",
            problem.key,
            ", ".join(f"{k}={t:.4f}ms" for k, t in zip(keys, got.ms)),
            got.method,
            wall_ms,
            f"; unfused epilogue costs {saving_ms:.4f} ms" if saving_ms else "",
            keys[best],
        )
        if entry is not None:
            self._await_verification("choices", problem.key, (*entry, True), kept_items)
            self.record_verified(kept_items, dict(zip(kept_items, eff)), device_type)
        return [kept_items[best]]

    def _predicted_compile_ms(self, problem, cands) -> dict:
        """{key: ms} the loaded compile-cost model predicts for the kept templates ({} without a
        model), recorded so every GPU run also checks the price against the measured compiles."""
        model = next((m for m in self._compile_models.values() if m is not None), None)
        if model is None:
            return {}
        try:
            ms = model.predict_for(problem, cands)
        except Exception:  # noqa: BLE001 -- a record, never worth a failed measurement
            log.debug("kselect: compile-cost prediction for the record failed", exc_info=True)
            return {}
        return {c.key: round(float(t), 1) for c, t in zip(cands, ms) if t == t and t > 0}

    def _stock_items(self, stage: str, items, restock=None):
        """What stock Inductor would have built: when enable() widened the search space for
        the ranker (stock_space set), a templates-stage fallback takes the choices Inductor
        builds for this GEMM in the user's own space (`restock`, e.g. DEFAULT's ~20-29 configs,
        not EXHAUSTIVE's 2,400) -- also for a GEMM kselect could not even read -- so a GEMM
        kselect cannot decide costs what it costs without kselect, never more."""
        if stage != "templates" or not self.stock_space or restock is None:
            return items
        try:
            kept = list(restock(self.stock_space))
        except Exception as exc:  # noqa: BLE001 -- Inductor's own generation failed: keep its list
            warn_once(
                f"restock:{type(exc).__name__}",
                f"kselect: cannot rebuild the {self.stock_space} "
                f"space ({type(exc).__name__}: {exc}); this GEMM tunes the space Inductor built",
            )
            return items
        log_decision(
            "kselect fallback: %d template choices narrowed to the %s space's %d",
            len(items),
            self.stock_space,
            len(kept),
        )
        return kept or items

    # -- dynamic M: a pick per size ------------------------------------------------------
    def dynamic_m_sizes(self, hint: int) -> list[int]:
        """The sizes a dynamic M is ranked at: the compile's hint first, then Inductor's
        `multi_kernel_hints` where set, else kselect's own `DYNAMIC_M_SIZES`."""
        configured = inductor_settings.multi_kernel_hints()
        sizes = configured if configured else list(DYNAMIC_M_SIZES)
        return [hint] + [s for s in dict.fromkeys(sizes) if s != hint and s > 0]

    def _select_per_size(
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
    ):
        """A GEMM whose M is dynamic: the ranker decides at each size of `dynamic_m_sizes` (no
        benchmark: scores only), and what is kept is the union of those picks: each size's
        first pick, then each size's second, ...; never more than `stock_size()` (how many
        choices stock Inductor would tune), the ATen safety net kept if any size kept it.

        Where Inductor generated choices per size (multi-kernel dispatch: each choice carries
        the size it was built for, `hint_override`), each size's choices are decided at that
        size and Inductor's dispatch picks among them per size; otherwise the union is the list
        Inductor tunes at its hint. Verify measures that list once, as any kept set, and caches
        no verified winner (one measured size cannot settle the others)."""
        groups: dict = {}
        for i, item in enumerate(items):
            groups.setdefault(choice_candidates.hint_override_of(item), []).append(i)
        at = lambda m: dataclasses.replace(problem, M=int(m))  # noqa: E731
        if set(groups) != {None}:  # Inductor's own per-size choices: each decided at its size
            plan = [(problem.M if h is None else h, idx) for h, idx in groups.items()]
        else:
            plan = [(m, list(range(len(candidates)))) for m in self.dynamic_m_sizes(problem.M)]
        per_size, picks = {}, []
        for n, (m, idx) in enumerate(plan):
            sub = [candidates[i] for i in idx]
            picked, _ = self.select(
                stage,
                at(m),
                {**fields, "m_size": m},
                fingerprint,
                sub,
                epilogue=epilogue,
                mapped=mapped if n == 0 else (0.0, 0.0),
            )
            per_size[m] = [sub[i].key for i in picked]
            picks.append([idx[i] for i in picked])
        kept = _round_robin(picks)
        if len(kept) > 1 and stock_size is not None:
            kept = _within(kept, stock_size(), candidates)
        keys = candidate_keys(candidates)
        self._plan(stage, problem, keys, kept)
        self.dynamic_picks.append(
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
        return kept, None

    def _await_verification(self, stage: str, problem_key: str, entry, kept_items) -> None:
        """Remember which cache entries Inductor's benchmark of `kept_items` will settle. The
        templates stage runs first for a GEMM, in the same thread, then its choices stage."""
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
            self._pending[tuple(id(c) for c in kept_items)] = entries

    def plan_ktcs(self, kernel_inputs, templates, op_name: str, generate=None):
        """The early decision: the template choices to keep, decided over kselect's own
        enumeration of the space (enumeration.template_candidates) before Inductor generates
        it -- Inductor then converts only what is kept, not ~2,400 configs per GEMM
        (`generate(template)`: Inductor's own candidates of a template kselect does not
        enumerate, mapped; without it such a template means no early decision). None = the
        usual path (deciding over Inductor's generated choices), which also owns every warning
        and fallback: a GEMM this cannot decide is decided there, exactly as without it."""
        if not self.early_decision or self.mode == "off":
            return None
        started = time.perf_counter(), time.thread_time()
        inductor_s = [0.0]  # Inductor generating a template kselect does not enumerate

        def timed_generate(template):
            t = time.perf_counter()
            try:
                return list(generate(template))
            finally:
                inductor_s[0] += time.perf_counter() - t

        try:
            problem, fields, device = signatures.ktc_signature(kernel_inputs, op_name)
            if getattr(device, "type", None) != "cuda":  # the enumeration is CUDA's space
                return None
            if fields.get("dynamic"):  # decided per size over Inductor's choices (_select_per_size)
                return None
            t_sig = time.perf_counter()
            fingerprint = device_fingerprint(device)
            epilogue = self._prices_epilogue(fingerprint)
            t_dev = time.perf_counter()
            load = self._load_ranker(fingerprint)  # before enumerating: its warm-up primes the memos
            t_enum = time.perf_counter()
            cands = enumeration.template_candidates(
                problem,
                templates,
                inductor_settings.gemm_search_space(),
                timed_generate if generate is not None else None,
            )
            t_mapped = time.perf_counter()
            if cands is None or len(cands) <= 1:
                log.debug(
                    "kselect %s: no early decision (templates %s give %s candidates)",
                    problem.key,
                    [str(getattr(t, "uid", t)) for t in templates],
                    "unknown" if cands is None else len(cands),
                )
                return None
            mapped = (t_mapped - started[0] - load[0], time.thread_time() - started[1] - load[1])
            # the map phase taken apart (ms): reading the GEMM, device fingerprint + epilogue
            # check, kselect's enumeration, and Inductor's own generation of the templates kselect
            # does not enumerate (inside the enumeration; work stock Inductor does for every GEMM)
            map_parts = {
                "map_signature": (t_sig - started[0]) * 1e3,
                "map_device": (t_dev - t_sig) * 1e3,
                "map_enumerate": (t_mapped - t_enum - inductor_s[0]) * 1e3,
                "map_inductor_generate": inductor_s[0] * 1e3,
            }
            kept, entry = self.select(
                "templates",
                problem,
                fields,
                fingerprint,
                cands,
                epilogue=epilogue,
                mapped=mapped,
                early=True,
                map_parts=map_parts,
            )
        except RankerUnavailable as exc:
            log.debug("kselect: no early decision: %s", exc)
            return None
        except Exception as exc:  # noqa: BLE001 -- the usual path decides instead
            log.debug(
                "kselect: early decision failed (%s: %s); deciding over Inductor's choices",
                type(exc).__name__,
                exc,
                exc_info=True,
            )
            return None
        out = [cands[i] for i in kept]
        if self.mode == "verify" and entry is not None and len(out) > 1:
            self._await_verification("templates", problem.key, (*entry, False), out)
        return out

    # -- the two hook points --------------------------------------------------------
    def select_ktcs(self, ktcs: list, kernel_inputs, op_name: str, restock=None) -> list:
        return self._guarded(
            "templates",
            ktcs,
            lambda: signatures.ktc_signature(kernel_inputs, op_name),
            choice_candidates.ktc_candidates,
            restock,
        )

    def select_choices(self, choices: list) -> list:
        return self._guarded(
            "choices", choices, lambda: signatures.choices_signature(choices), choice_candidates.caller_candidates
        )

    def uuid(self) -> str:
        """Stable across processes (it is part of Inductor's FX-graph cache key on 2.13)."""
        source = (
            getattr(self.ranker, "ident", type(self.ranker).__name__)
            if self.ranker is not None
            else (
                str(self.model)
                if isinstance(self.model, (str, bytes)) or hasattr(self.model, "__fspath__")
                else type(self.model).__name__
            )
        )
        decides = ":".join(f"{name}={value}" for name, value in self._decision_fields.items())
        return f"kselect:{decides}:{source}"


# each setting reads as a read-only attribute (`sel.k`, `sel.mode`) of the one SelectorSettings;
# `warm_start` is the warm-up itself (`warm_start_on` the setting)
for _name in SETTINGS:
    if _name != "warm_start":
        setattr(Selector, _name, property(operator.attrgetter("config." + _name), doc=f"the {_name} setting"))


def _round_robin(picks: list[list[int]]) -> list[int]:
    """Each list's first index, then each list's second, ..., without repeats."""
    out: list[int] = []
    for rank in range(max(map(len, picks), default=0)):
        out.extend(p[rank] for p in picks if rank < len(p) and p[rank] not in out)
    return out


def _within(kept: list[int], limit: int, candidates) -> list[int]:
    """The first `limit` of `kept` (at least one); with room for two or more, an ATen choice
    that was kept stays in (verify's safety net) in place of the last."""
    if len(kept) <= max(limit, 1):
        return kept
    head = kept[: max(limit, 1)]
    aten = next((i for i in kept if candidates[i].backend == "aten"), None)
    if aten is not None and aten not in head and len(head) > 1:
        head[-1] = aten
    return head


def _compiles_by_key(compiles: dict, keys: list[str]) -> dict:
    """verify_timing's compile record with each kept template named by its candidate key."""
    if not compiles:
        return {}
    return {**compiles, "per_choice": {keys[i]: t for i, t in compiles["per_choice"].items()}}


# ---------------------------------------------------------------------------------------
# installation
_state = threading.local()
_preprocess_lock = threading.Lock()
_preprocess_registered = False


def _active() -> Selector | None:
    handler = inductor_settings.current_choices()
    return getattr(handler, "kselect_selector", None)


def _preprocess(choices):
    """Global preprocessing fn: acts only while a kselect handler is Inductor's choices handler."""
    sel = _active()
    return choices if sel is None else sel.select_choices(list(choices))


def _feedback(timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
    """Global feedback saver: hands verify-mode measurements to the active selector."""
    sel = _active()
    if sel is not None and sel.mode == "verify":
        try:
            device = input_nodes[0].get_device() if input_nodes else None
            sel.record_verified(list(choices), dict(timings), getattr(device, "type", "cuda"))
        except Exception as exc:  # noqa: BLE001 -- never break a compile over the cache
            warn_once(
                f"verify-record:{type(exc).__name__}",
                f"kselect: could not cache a verified winner ({type(exc).__name__}: {exc})",
            )


def _ensure_preprocess() -> None:
    global _preprocess_registered
    with _preprocess_lock:
        if not _preprocess_registered:
            autotune.add_preprocessing_fn(_preprocess)
            autotune.add_feedback_saver(_feedback)
            _preprocess_registered = True


def enable(mode: str = "verify", **settings) -> Selector | None:
    """Install kselect for subsequent max-autotune compiles in this thread (mode="off": remove it).

    The keywords are config.SelectorSettings' fields, each checked before the active selector
    is touched (SettingError naming a bad one). A GEMM kselect cannot rank goes back to the
    user's own search space. The keywords:
    """
    config = SelectorSettings.from_keywords(mode=mode, **settings)
    sel = None if config.mode == "off" else Selector(**config.keywords())
    disable()
    reset_warnings()
    if sel is None:
        return None
    unsupported = torch_release.torch_support_problem()
    if unsupported:
        # the hooks below are private Inductor API: outside the tested range, stock autotuning
        warn_once("torch-version", f"kselect: {unsupported} -- stock autotuning")
        return None
    register_with_torch_logs()
    _install(sel, config.search_space)
    log.info(
        "kselect enabled: mode=%s k=%d keep_aten=%s cache=%s",
        sel.mode,
        sel.k,
        sel.keep_aten,
        sel.cache.root if sel.cache else None,
    )
    return sel


enable.__doc__ += keyword_help()
enable.__signature__ = SelectorSettings.signature()


def _install(sel: Selector, search_space: str | None) -> None:
    """Make `sel` the active selector of this thread (nothing may be active), widening Inductor's
    GEMM space to `search_space` (None: left as it is)."""
    sel.flydsl.prepare()
    handler = template_configs.make_selecting_choices(
        sel.select_ktcs, sel.uuid(), join=sel.flydsl, plan_ktcs=sel.plan_ktcs
    )
    handler.kselect_selector = sel
    _ensure_preprocess()
    restore_handler = inductor_settings.install_choices(handler)
    restore_space = lambda: None  # noqa: E731
    restore_warmup = _warm_as_compiles_start(sel)
    sel.stock_space = None
    if search_space:
        previous, restore_space = inductor_settings.set_gemm_search_space(search_space)
        if previous.upper() != search_space.upper():
            sel.stock_space = previous

    def restore():
        restore_warmup()
        restore_space()
        restore_handler()

    _state.restore = restore
    _state.selector = sel
    _state.search_space = search_space


def _warm_as_compiles_start(sel: Selector):
    """Begin the warm start as each Dynamo compile starts (not at enable(): it belongs to the
    compile it speeds up, and is timed with it); returns the undo."""
    if sel.warm_start is None:
        return lambda: None
    return dynamo_callbacks.on_compile_start(sel.warm_start.start)


def disable() -> None:
    """Back to stock Inductor (the handler that was installed before enable())."""
    restore = getattr(_state, "restore", None)
    if restore is not None:
        restore()
    sel = getattr(_state, "selector", None)
    if sel is not None and sel.cache is not None:
        sel.cache.flush()  # its queued decisions on disk before anyone else reads the cache
    _state.restore = None
    _state.selector = None
    _state.search_space = None


def current() -> Selector | None:
    return getattr(_state, "selector", None)


@contextlib.contextmanager
def selecting(mode: str = "verify", **kwargs):
    """`with selecting("predict", ranker=...):` -- kselect for the compiles inside, then the
    outer configuration again (the same Selector, its stats and loaded model) on any exit: the
    block returning or raising, or enable() refusing its arguments (which changes nothing)."""
    prev, prev_space = current(), getattr(_state, "search_space", None)
    try:
        yield enable(mode, **kwargs)
    finally:
        if current() is not prev or prev is None:
            disable()
            if prev is not None:  # re-install the outer configuration
                _install(prev, prev_space)


def enable_from_env(environ=None) -> Selector | None:
    """enable() from the KSELECT_* environment options (config.OPTIONS)."""
    o = read_options(environ)
    if o["mode"] == "off":
        return None
    return enable(**o)  # every environment option is an enable() keyword
