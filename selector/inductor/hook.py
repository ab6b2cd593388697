"""The Inductor plug-in: prune max-autotune's GEMM choices with a ranker, cache decisions.

Two hook points, both in compat/ (the only package touching private Inductor API):
- `_finalize_template_configs` (an InductorChoices subclass, compat/template_configs.py) sees
  the KTC-based templates (ATen, Triton mm / persistent TMA / decompose-k) BEFORE code
  generation -- where pruning saves most on the GPU;
- a preprocessing function (compat/autotune.py) sees every backend's ChoiceCallers (CPP,
  CUTLASS, ... are appended outside the KTC path) after codegen; one choice left = nothing
  benchmarked.
Before either decides, the op gate (selector/ops/gate.py) names the op Inductor is lowering:
an op without a module in selector/ops/, or a dtype or kind the serving model does not hold,
gets stock's own choices (one INFO line), not a fallback. An op it lets through is read by its
op kind (selector/ops/: mm.py, scaled_mm.py, grouped_mm.py): its signature, its candidate
mapping, whether its epilogue is read; then decided by the same pipeline.
Both ask the `Selector`, a thin adapter that wires the parts, each a value-passing object in its
own room: the op kind reads the GEMM and maps its choices to Candidates (selector/ops/); the
rankers per device (inductor/device_rankers.py) give the ranker; the decider
(decide/decider.py) ranks, keeps and records, returning a `Decision` (per size for a dynamic M);
the verifier (verify/verifier.py) takes the decision and the choices and returns what Inductor
gets: the measured winner, or the kept set for Inductor's benchmark. Any failure -> the stock
list and one warning per cause: kselect can make a compile slower to tune, never wrong or
crashed. On ROCm the handler also lets FlyDSL join mm/addmm (selector/backends/flydsl.py),
ranked with the rest. Installing a Selector is inductor/lifecycle.py's.

What the parts share is handed to them, never reached for: the settings (config.SelectorSettings),
the decision cache, verify's compile pricing (model/compile_price.py) and the record of what
was done (selector/record.py: `stats`, `decisions`, `measurements`, `dynamic_picks`).
"""

from __future__ import annotations

import logging
import operator
import time

from kselect.selector.backends.registry import BackendJoins
from kselect.selector.compat import current_graph
from kselect.selector.config import SETTINGS, SelectorSettings
from kselect.selector.decide.cache import DecisionCache
from kselect.selector.decide.decider import Decider, Decision
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.fingerprint import device_fingerprint
from kselect.selector.inductor.device_rankers import DeviceRankers
from kselect.selector.inductor.early_decision import EarlyDecision
from kselect.selector.logs import log_decision
from kselect.selector.model.compile_price import CompilePricing
from kselect.selector.ops import registry as op_kinds
from kselect.selector.ops.gate import OpGate
from kselect.selector.ops.mm import MM as DENSE_DEFAULT  # an admitted name no module claims: read as before
from kselect.selector.ops.naming import lowering_kind
from kselect.selector.record import SelectorRecord
from kselect.selector.verify.verifier import Verifier
from kselect.selector.warmup.triton_setup import WarmStart
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")


class Selector:
    """One configuration (mode, k, ranker source, cache), wired from its parts. Holds no Inductor
    state itself."""

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
        self.cache = DecisionCache(config.cache_dir) if config.cache_dir else None
        self.record = SelectorRecord()  # what this selector did: stats, decisions, measurements
        self.rankers = DeviceRankers(config, self.warm_start)  # the ranker per device
        self.pricing = CompilePricing(config.mode, config.compile_budget)  # verify's price on compiles
        self.decider = Decider(config, self.rankers, self.pricing, self.cache, self.record)
        self.verifier = Verifier(config, self.cache, self.record, self.pricing, self.warm_start)
        self.early = EarlyDecision(config, self.decider, self.verifier, self._load_ranker, self._read_epilogue)
        self.joins = BackendJoins()  # the backends that join Inductor's choices (selector/backends/)
        # -- the op gate: the ops this selector decides; every other goes to stock Inductor under
        # the user's own settings (selector/ops/gate.py)
        self.op_gate = OpGate(self.rankers.holdings)

    # what this selector did, read by benches and tests (selector/record.py)
    stats = property(lambda self: self.record.stats)
    decisions = property(lambda self: self.record.decisions)
    measurements = property(lambda self: self.record.measurements)
    dynamic_picks = property(lambda self: self.record.dynamic_picks)

    def load_named_model(self) -> None:
        """Read the model file the `model` setting names, at enable() (DeviceRankers.load_named_model)."""
        self.rankers.load_named_model()

    def ranker_for(self, fingerprint: dict):
        """The ranker for this device (DeviceRankers.ranker_for); raises RankerUnavailable."""
        return self.rankers.ranker_for(fingerprint)

    # -- the decider's and the verifier's calls, as benches and the golden record make them ----
    def select(self, *args, **kwargs) -> Decision:
        """One decision over a GEMM's candidates (Decider.decide)."""
        return self.decider.decide(*args, **kwargs)

    def _select_per_size(self, *args, **kwargs) -> Decision:
        """A dynamic M's decision (Decider.decide_per_size)."""
        return self.decider.decide_per_size(*args, **kwargs)

    def _planned_covers(self, problem, cands) -> bool:
        """The choices are what this GEMM's templates stage kept (Decider.planned_covers)."""
        return self.decider.planned_covers(problem, cands)

    def _await_verification(self, *args, **kwargs) -> None:
        """Which cache entries a benchmark of a kept set settles (Verifier.await_verification)."""
        self.verifier.await_verification(*args, **kwargs)

    def record_verified(self, kept_items: list, timings: dict, device_type: str, winner=None) -> None:
        """Inductor benchmarked a kept set: its winner cached (Verifier.record_verified)."""
        self.verifier.record_verified(kept_items, timings, device_type, winner=winner)

    def record_fusion_pick(self, choices: list, chosen, device_type: str) -> None:
        """Inductor's scheduler picked after its epilogue benchmark: cached (Verifier.record_fusion_pick)."""
        self.verifier.record_fusion_pick(choices, chosen, device_type)

    def _load_ranker(self, fingerprint: dict) -> tuple[float, float]:
        """Load this device's ranker and warm it for the graph being lowered (DeviceRankers.prepare),
        and in verify the compile-cost model (~20 ms once); returns the (wall, thread CPU) seconds
        that took, which are not the decision's: like the model load, they are reported apart (the
        decision records them as `setup_ms`). Raises RankerUnavailable."""
        t0, c0 = time.perf_counter(), time.thread_time()
        self.rankers.prepare(fingerprint)
        if self.pricing.on:
            self.pricing.model_for(fingerprint)
        took = time.perf_counter() - t0, time.thread_time() - c0
        self.decider.spent_setup(took[0] * 1e3)
        return took

    @property
    def warm_start_on(self) -> bool:
        """The warm_start setting (the `warm_start` attribute is the warm-up itself, or None)."""
        return self.config.warm_start

    def settings(self) -> dict:
        """The keywords that make this configuration again (enable(**settings()))."""
        return self.config.keywords()

    # -- the hook points ----------------------------------------------------------------
    def plan_ktcs(self, kernel_inputs, templates, op_name: str, generate=None):
        """Before Inductor generates a GEMM's template configs: the early decision's (EarlyDecision.plan)."""
        return self.early.plan(kernel_inputs, templates, op_name, generate)

    def select_ktcs(self, ktcs: list, kernel_inputs, op_name: str, restock=None) -> list:
        """Templates stage, for an op the gate let through (its op kind, selector/ops/)."""
        kind = op_kinds.get(lowering_kind(op_name)) or DENSE_DEFAULT
        return self.select_items(
            "templates",
            ktcs,
            lambda: kind.ktc_signature(kernel_inputs, op_name, ktcs),
            kind.ktc_candidates,
            restock,
        )

    def select_choices(self, choices: list) -> list:
        """Choices stage: the op gate names the op kind (None: not one kselect decides)."""
        kind = self.op_gate.kind_of_choices(choices)
        if kind is None:
            return choices
        return self.select_items("choices", choices, lambda: kind.choices_signature(choices), kind.caller_candidates)

    def select_items(self, stage: str, items, signature, to_candidates, restock=None):
        """One GEMM at one stage, top to bottom: `signature()` reads it (problem, key fields,
        device), the device's ranker loads, `to_candidates(items)` maps its choices, the decider
        decides, the verifier hands back what Inductor gets. Any failure -> the user's own choices (`_stock_items`),
        one warning per cause. `restock(space)`: the templates stage's choices as stock Inductor
        builds them in the user's own space (compat/template_configs.Restock), for narrowing a fallback."""
        if self.mode == "off" or len(items) <= 1:
            return items
        problem = cands = None
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
            # an op kind ranked bare (the grouped GEMM): no epilogue block or fusing few for its template
            gemm_epilogue, epilogue = (
                self._read_epilogue(fingerprint) if op_kinds.of(problem).reads_epilogue else (None, False)
            )
            mapped = (time.perf_counter() - started[0] - load[0], time.thread_time() - started[1] - load[1])
            # what either decision gets besides the candidates: the epilogue (the object and whether
            # its few are handed over) and the time spent reading and mapping
            given = {"epilogue": epilogue, "gemm_epilogue": gemm_epilogue, "mapped": mapped}
            as_planned = stage == "choices" and self.decider.planned_covers(problem, cands)
            if "M" in fields.get("dynamic", ()) and not as_planned:
                stock_size = (
                    (lambda: len(restock.build()))
                    if stage == "templates" and restock is not None
                    else (lambda: len(items))
                )
                decision = self.decider.decide_per_size(
                    stage, problem, fields, fingerprint, cands, items, stock_size=stock_size, **given
                )
            else:
                decision = self.decider.decide(
                    stage, problem, fields, fingerprint, cands, as_planned=as_planned, **given
                )
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
        return self.verifier.verify(stage, problem, decision, items, str(getattr(device, "type", device)), epilogue)

    def _read_epilogue(self, fingerprint: dict) -> tuple:
        """(the GEMM's Epilogue, read from the graph being lowered (compat/current_graph.py) when
        anything needs it, else None; whether the decision hands Inductor the epilogue's few).
        The few: with the epilogue_fusion option, for a GEMM whose epilogue a template can fuse,
        the decision keeps them (decide/policy.py's with_fusing_few) and Inductor's own benchmark
        picks among them; with time_fused (verify), one whose epilogue holds an activation is
        "fused": kselect times the few's fused forms (verify/fused_forms.py). The Epilogue
        itself: a ranker trained with the epilogue feature block
        (`reads_epilogue`) ranks with it. Call after the ranker loaded (`_load_ranker`)."""
        few = self.epilogue_fusion and self.mode in ("verify", "predict")
        fused = self.time_fused and self.mode == "verify"
        if not (few or fused or getattr(self.rankers.ranker_for(fingerprint), "reads_epilogue", False)):
            return None, False
        gemm_epilogue = current_graph.current_epilogue()
        if fused and gemm_epilogue.fusable and gemm_epilogue.kind_count("activation"):
            return gemm_epilogue, "fused"
        return gemm_epilogue, bool(few and gemm_epilogue.fusable)

    def _stock_items(self, stage: str, items, restock=None):
        """What stock Inductor would have built: where kselect widened the search space for the
        decision (`restock`, compat/template_configs.Restock), a templates-stage fallback takes
        the choices Inductor builds for this GEMM in the user's own space (e.g. DEFAULT's ~20-29
        configs, not EXHAUSTIVE's 2,400) -- also for a GEMM kselect could not even read -- so a
        GEMM kselect cannot decide costs what it costs without kselect, never more."""
        if stage != "templates" or restock is None:
            return items
        try:
            kept = list(restock.build())
        except Exception as exc:  # noqa: BLE001 -- Inductor's own generation failed: keep its list
            warn_once(
                f"restock:{type(exc).__name__}",
                f"kselect: cannot rebuild the {restock.space} "
                f"space ({type(exc).__name__}: {exc}); this GEMM tunes the space Inductor built",
            )
            return items
        log_decision(
            "kselect fallback: %d template choices narrowed to the %s space's %d",
            len(items),
            restock.space,
            len(kept),
        )
        return kept or items

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
        decides = ":".join(f"{name}={value}" for name, value in self.config.decision_fields().items())
        return f"kselect:{decides}:{source}"


# each setting reads as a read-only attribute (`sel.k`, `sel.mode`) of the one SelectorSettings;
# `warm_start` is the warm-up itself (`warm_start_on` the setting)
for _name in SETTINGS:
    if _name != "warm_start":
        setattr(Selector, _name, property(operator.attrgetter("config." + _name), doc=f"the {_name} setting"))
