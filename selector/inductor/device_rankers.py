"""The ranker per device: the cost model that fits the device (model/discovery.py), with the
grouped model of the card joined where one sits beside it, loaded once per process (or the
ranker enable() was given), and warmed for the GEMMs of each graph Inductor
lowers. A model file the user names is read once, at enable() (`load_named_model`), and serves
any card, with one warning when it was made for another. One object, owned by the Selector; the
decider asks it for a device's ranker, the op gate for what that ranker holds."""

from __future__ import annotations

import logging
import threading
import weakref
from pathlib import Path

from kselect.selector.compat import choice_candidates, current_graph
from kselect.selector.decide.cache import candidate_set_digest
from kselect.selector.decide.rankers import CostModelRanker, RankerUnavailable
from kselect.selector.fingerprint import device_fingerprint
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")


class DeviceRankers:
    """A ranker per device fingerprint (a RankerUnavailable remembered too) and the warm-up per
    graph, for one configuration: its `ranker`, `model`, and `warm_start` (the Triton set-up
    begun as a compile starts, or None)."""

    def __init__(self, config, warm_start=None):
        self.ranker, self.model, self.warm_start = config.ranker, config.model, warm_start
        self.loaded: dict = {}  # {fingerprint_id: ranker, or the RankerUnavailable it raised}
        self._named_model = None  # the model file `model` names, once load_named_model read it
        self._holdings: dict = {}  # what each card's serving model holds, from its sidecars (the op gate's)
        self._picks: dict = {}  # {fingerprint_id: (digest, {problem key: candidate key})}, the card's measured picks
        self._lock = threading.Lock()
        self._warmed_graphs = weakref.WeakSet()  # graphs whose GEMMs the ranker was warmed for
        self._warmed_default = False  # the graph-less warm-up ran (once per process)

    def load_named_model(self) -> None:
        """Read the model file the `model` setting names (nothing for the shipped model, a
        loaded one or a `ranker`): its sidecar and trees by the one loader, never unpickled.
        Raises ModelError naming the file and the problem; the device is checked per GPU."""
        from kselect.selector.model.cost_model import CostModel

        if self.ranker is None and self.model and not isinstance(self.model, CostModel):
            self._named_model = CostModel.load(self.model)

    def ranker_for(self, fingerprint: dict):
        """The ranker for this device; raises RankerUnavailable (remembered) if there is none."""
        if self.ranker is not None:
            return self.ranker
        fid = fingerprint["fingerprint_id"]
        with self._lock:
            if fid not in self.loaded:
                try:
                    self.loaded[fid] = self._load_model_ranker(fingerprint)
                except RankerUnavailable as exc:
                    self.loaded[fid] = exc
            got = self.loaded[fid]
        if isinstance(got, Exception):
            raise got
        return got

    def measured_picks(self, fingerprint: dict) -> tuple[str, dict]:
        """(a digest of the table, {problem key: candidate key}) of this card's shipped measured
        picks (model/measured_picks.py), read once per card; empty where a ranker or a model was
        given: the user's choice ranks every GEMM."""
        if self.ranker is not None or self.model:
            return "", {}
        fid = fingerprint["fingerprint_id"]
        with self._lock:
            if fid not in self._picks:
                from kselect.selector.model.measured_picks import card_picks, table_digest

                picks = card_picks(fingerprint)
                self._picks[fid] = (table_digest(picks), picks)
            return self._picks[fid]

    def holdings(self, device):
        """What the ranker for `device` decides (its `ops`, `scalings`, `dtypes`, `grouped`), for
        the op gate: the ranker itself where one was given or is loaded already; else read from
        the sidecars of the model that would serve (discovery.serving_holdings), nothing loaded
        or warmed, so an op kselect leaves to stock costs the compile no model load. None: no
        model may serve this device. Raises ModelError for a sidecar that cannot be read."""
        from kselect.selector.model.artifact import read_sidecar, sidecar_path
        from kselect.selector.model.cost_model import CostModel
        from kselect.selector.model.discovery import serving_holdings

        if self.ranker is not None:
            return self.ranker
        fingerprint = device_fingerprint(device)
        with self._lock:
            loaded = self.loaded.get(fingerprint["fingerprint_id"])
        if loaded is not None:
            return None if isinstance(loaded, Exception) else loaded
        if not fingerprint.get("gpu_name") and not self.model:
            return None  # models rank GPU kernels: the usual path says so for a modelled GEMM
        fid = fingerprint["fingerprint_id"]
        with self._lock:
            if fid in self._holdings:  # read once per card: the sidecars do not change in a process
                return self._holdings[fid]
        if isinstance(self.model, str) or hasattr(self.model, "__fspath__"):  # a model file the user named
            named = self._named_model
            meta = named.metadata_ if named is not None else read_sidecar(sidecar_path(self.model))
            held = serving_holdings(fingerprint, meta, Path(self.model).parent)
        elif isinstance(self.model, CostModel):  # a model the user gave
            held = serving_holdings(fingerprint, self.model.metadata_)
        else:
            held = serving_holdings(fingerprint)
        with self._lock:
            self._holdings[fid] = held
        return held

    def _load_model_ranker(self, fingerprint: dict):
        from kselect.selector.model.cost_model import CostModel, ModelError
        from kselect.selector.model.discovery import load_shipped, serve_named
        from kselect.selector.model.reach import ReachModel

        by_dtype = None  # a model the user gave or named decides its own dtypes alone
        try:
            if isinstance(self.model, CostModel):
                model = self.model
            elif self.model:
                model = self._named_model or CostModel.load(self.model)
                other_card = serve_named(model, fingerprint, self.model)  # the user's choice stands, with a warning
                if other_card:
                    warn_once("model:other-card", other_card)
            elif fingerprint.get("gpu_name"):
                model = load_shipped(fingerprint=fingerprint)
                by_dtype = self._dtype_rankers(fingerprint, model)
            else:
                raise RankerUnavailable(
                    "no-gpu",
                    f"kselect: no cost model for {fingerprint.get('device_type')} "
                    "devices (models rank GPU kernels) -- stock autotuning",
                )
            reach = ReachModel.beside(model)  # verify's budget, where one was trained beside it
        except ModelError as exc:
            raise RankerUnavailable("model", f"kselect: cannot use cost model: {exc} -- stock autotuning") from None
        model.set_threads(1)
        ranker = CostModelRanker(model, fingerprint, self._grouped_ranker(fingerprint), by_dtype, reach)
        ranker.check()
        return ranker

    def _dtype_rankers(self, fingerprint: dict, model) -> dict:
        """joined_dtype_rankers, each checked; one that cannot be read or serve here leaves its
        dtypes to stock, with one warning."""
        from kselect.selector.model.cost_model import ModelError

        try:
            joined = joined_dtype_rankers(fingerprint, model)
            for ranker in {id(r): r for r in joined.values()}.values():
                ranker.check()
        except (ModelError, RankerUnavailable) as exc:
            warn_once(
                "model:dtypes",
                f"kselect: cannot use a shipped model of other dtypes: {exc} -- stock autotuning for them",
            )
            return {}
        return joined

    def _grouped_ranker(self, fingerprint: dict):
        """The grouped model joined to this device's cost model (decide/grouped_ranker.py), or None."""
        from kselect.selector.decide.grouped_ranker import grouped_beside

        named = isinstance(self.model, str) or hasattr(self.model, "__fspath__")
        return grouped_beside(fingerprint, self.model if named else None)

    def prepare(self, fingerprint: dict) -> None:
        """Load this device's ranker if not yet (once per process; raises RankerUnavailable) and
        warm it for the graph being lowered (once per graph). Called before the candidates are
        mapped or enumerated, since the warm-up also fills the memos those use -- the first
        decision of a process otherwise enumerated cold (map 17.6 ms on the H200,
        reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels)."""
        if self.warm_start is not None and not self.warm_start.started:
            self.warm_start.start()  # the last chance: CUDA was not in use as the compile began
        self._warm_for_graph(self.ranker_for(fingerprint))

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


def joined_dtype_rankers(fingerprint: dict, model) -> dict:
    """{dtype: ranker} of the card's shipped models of dtypes `model` lacks (discovery.py
    dtype_models), one ranker per model file. Raises ModelError for a model that cannot be read."""
    from kselect.selector.model.discovery import dtype_models
    from kselect.selector.model.held_ops import held_dtypes
    from kselect.selector.model.reach import ReachModel

    models = dtype_models(fingerprint, held_dtypes(model.metadata_))
    rankers = {}
    for m in {id(m): m for m in models.values()}.values():
        m.set_threads(1)
        rankers[id(m)] = CostModelRanker(m, fingerprint, reach=ReachModel.beside(m))
    return {d: rankers[id(m)] for d, m in models.items()}
