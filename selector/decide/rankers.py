"""Rankers score a problem's candidates; the policy (decide/policy.py) turns scores into the kept set.

A `Ranker` answers one question: `rank(problem, candidates) -> scores` (lower = predicted
faster; NaN or inf = no opinion / cannot run). It raises `RankerUnavailable` when it has no
data for this device, dtype or problem, and the selector leaves that GEMM to stock Inductor.

- `CostModelRanker`: the learned XGBoost cost model (the real one, GPU). A model trained with
  the epilogue feature block (its sidecar declares it) also reads the GEMM's Epilogue: the
  pipeline passes it to `rank` when the ranker says `reads_epilogue`.
- `MeasuredRanker`: a table of measured times (candidate key -> ms per problem key); honest
  where a model cannot serve (CPU CI, a device without a trained model).

A ranker may say which backends it has data for (`backends`); the policy does not score the
candidates of any other backend by guesswork (decide/policy.py). It may say which ops it holds
(`ops`: Problem ops; `scalings`: fp8 scaled_mm's scaling kinds; "grouped_mm" with a grouped model
joined, decide/grouped_ranker.py): the op gate sends any other op to stock Inductor
(selector/ops/gate.py); without `ops` it holds mm, addmm and bmm.
"""

from __future__ import annotations

import csv
import math
import threading
import time
from pathlib import Path
from typing import Mapping, Protocol, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import FP8_DTYPES, Problem, key_op, key_scaling
from kselect.selector.decide.aten_probe import AtenKernelFacts
from kselect.selector.decide.candidate_sets import KEY_INDEX, backends_of, candidate_keys
from kselect.selector.decide.nearest import NearestTableError, shape_kind
from kselect.selector.decide.nearest import from_metadata as nearest_from_metadata
from kselect.selector.model.held_ops import held_dtypes, held_ops, held_scalings, predict_dtypes
from kselect.selector.ops import registry as op_kinds
from kselect.selector.unavailable import RankerUnavailable

# Models whose metadata predates the `backends` field were all trained on the collector's
# default backends.
LEGACY_MODEL_BACKENDS = ("aten", "triton")


# Row-block classes below the largest (Inductor clamps BLOCK_M to next_power_of_2(M) >= 16):
# M = 1..16, 17..32, 33..64, 65..128 -- decode, small-batch and prefill-chunk GEMMs.
WARM_ROW_CLASSES = (16, 32, 64, 128)


class Ranker(Protocol):
    #: True when scores are log(predicted time): the policy then reads gaps as time ratios.
    log_time_scores: bool
    #: what identifies the ranker's knowledge (model hash, table hash): part of cache keys
    ident: str
    #: (optional) backends it has data for; None or absent = it scores any backend
    backends: frozenset | None

    def rank(self, problem: Problem, candidates: Sequence[Candidate]) -> np.ndarray: ...


class CostModelRanker:
    """The shipped learned cost model; refuses devices and dtypes it was not trained on."""

    log_time_scores = False

    def __init__(self, model, fingerprint: Mapping | None, grouped=None, by_dtype: Mapping | None = None, reach=None):
        """`grouped`: the GroupedRanker joined to it (decide/grouped_ranker.py), which scores
        `_grouped_mm` and puts "grouped_mm" among its `ops`; None: grouped GEMMs go to stock.
        `by_dtype`: {dtype: CostModelRanker} of the card's models of dtypes this one lacks
        (model/discovery.py dtype_models), each scoring its own (grouped_ranker.for_problem).
        `reach`: the model's verify-budget model (model/reach.py ReachModel), read by
        `rank_with_reach`; None: verify's budget is the policy's default tiers."""
        self.model = model
        self.reach = reach
        #: scores are predicted log(time / ATen's time): the policy reads them as gaps to cuBLAS
        self.aten_gap_scores = bool(getattr(model, "aten_relative", False))
        self.fingerprint = fingerprint
        meta = getattr(model, "metadata_", {}) or {}
        training = meta.get("training") if isinstance(meta.get("training"), Mapping) else {}
        #: the dtypes its own trees decide; `dtypes` adds the joined models' (what kselect takes)
        self.own_dtypes = held_dtypes(meta)
        #: of those, the ones predict may take a template for (the others: cuBLAS)
        self.predict_dtypes = predict_dtypes(meta)
        self.by_dtype = {d: r for d, r in (by_dtype or {}).items() if d not in self.own_dtypes}
        self.dtypes = self.own_dtypes + tuple(sorted(self.by_dtype))
        self.backends = frozenset(meta.get("backends") or training.get("backends") or LEGACY_MODEL_BACKENDS)
        # the optional feature blocks it was trained with; the epilogue block reads the GEMM's Epilogue
        self.feature_blocks = tuple(getattr(model, "feature_blocks_", ()))
        self.reads_epilogue = "epilogue" in self.feature_blocks
        # the ops (and scaled_mm's scaling kinds) it ranks (selector/model/held_ops.py)
        self.ops, self.scalings = held_ops(meta), held_scalings(meta)
        # what decides its rankings: the trees (data + training time) and the selection cascade
        self.ident = (
            "model:"
            + str(meta.get("dataset_hash") or "")[:16]
            + ":"
            + str(meta.get("trained_at"))
            + f":c{getattr(model, 'cascade_trees', '')}/{getattr(model, 'cascade_keep', '')}"
        )
        if self.feature_blocks:
            self.ident += ":b" + ",".join(self.feature_blocks)
        if reach is not None:  # verify's kept sets follow its budget
            self.ident += ":" + reach.ident
        self.grouped = grouped
        if grouped is not None:
            self.ops |= grouped.ops
            self.ident += ":" + grouped.ident
        self._phases = threading.local()
        # what cuBLAS launches for each GEMM, read on CUDA devices (the model's ATen-kernel columns)
        fp = fingerprint or {}
        self.aten_kernel = AtenKernelFacts(fp.get("device_type") == "cuda" and not fp.get("hip_version"))
        self._warmed_classes: set = set()  # warm_up's size classes done (the selector serialises it)
        # the nearest measured shapes' fastest templates, verify's lookup slot (selector/decide/nearest.py)
        self.nearest, self._nearest_error = None, None
        try:
            self.nearest = nearest_from_metadata(meta)
        except NearestTableError as exc:
            self._nearest_error = exc
        if self.nearest is not None:
            self.ident += f":n{len(self.nearest)}"

    def last_phases_ms(self) -> dict:
        """{"featurize": ms, "trees": ms} of this thread's latest rank() ({} before any)."""
        return dict(getattr(self._phases, "ms", {}))

    def check(self) -> None:
        """Raise RankerUnavailable unless the model accepts this device (CostModel.check_device)."""
        from kselect.selector.model.cost_model import ModelError

        if self._nearest_error is not None:
            raise RankerUnavailable("model", f"kselect: cost model's {self._nearest_error} -- stock autotuning")
        if not self.fingerprint or not self.fingerprint.get("gpu_name"):
            raise RankerUnavailable(
                "no-gpu",
                "kselect: this device has no GPU fingerprint; the cost "
                "model only ranks the GPU it was trained on -- stock autotuning",
            )
        try:
            self.model.check_device(self.fingerprint)
        except ModelError as exc:
            raise RankerUnavailable("device", f"kselect: {exc} -- stock autotuning") from None

    def warm_up(self, problems: Sequence[Problem] | None = None) -> list[Candidate]:
        """Rank the candidate space of each size class among `problems` once, so their first
        decisions find the candidate encodings and the enumeration memos warm (tens of ms,
        reported apart from the decisions, like the model load). A class warmed before is
        skipped.

        `problems`: the GEMMs of the graph being compiled (the selector reads them when the
        graph's first GEMM is lowered). A decode graph then warms only its small class, ~20 ms
        on the dev CPU, not the large one it never uses (~55 ms more;
        reports/2026-12-05-ranker-load-dev-cpu). None: the large class of every dtype the model knows
        (4096^3; every smaller class's tiles are among its own) and the smaller row-block
        classes' tile spaces -- what a process warms when no graph is visible. Returns the
        candidates ranked (the selector primes its other caches with them)."""
        from kselect.kernels.triton.space import template_space, triton_space, uses_decompose_k

        rows = problems is None
        if rows:
            problems = [Problem(4096, 4096, 4096, dtype, "nt") for dtype in self.own_dtypes if dtype not in FP8_DTYPES]
        warmed = self._warmed_classes
        ranked: list[Candidate] = []
        for joined in {id(r): r for r in self.by_dtype.values()}.values():  # each its own dtypes
            ranked += joined.warm_up(None if rows else [p for p in problems if p.dtype in joined.own_dtypes])
        for problem in problems:
            templates = op_kinds.of(problem).warm_templates
            if problem.dtype not in self.own_dtypes or not templates:
                continue  # stock's anyway, or (fp8) a space of its own, ranked at its decision
            # a size class is its memoised tile tuples (one object per class) and decompose-k's use
            tiles = tuple(template_space(problem, t, "exhaustive") for t in templates)
            key = (problem.dtype, templates, tuple(map(id, tiles)), uses_decompose_k(problem))
            if key in warmed:
                continue
            candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
            self.rank(problem, candidates, probe=False)  # stand-in problems: nothing to probe
            warmed.add(key)
            ranked += candidates
        if rows:
            for m in WARM_ROW_CLASSES:  # tile spaces depend on the sizes only, not the dtype: once each
                for template in ("mm", "persistent_tma"):
                    template_space(Problem(m, 4096, 4096, self.own_dtypes[0], "nt"), template, "exhaustive")
        return list(dict.fromkeys(ranked))

    def rank(self, problem: Problem, candidates: Sequence[Candidate], probe: bool = True, epilogue=None) -> np.ndarray:
        """Scores of `candidates`; `probe`: read what cuBLAS launches for `problem` (the
        ATen-kernel columns) -- warm_up's stand-in problems need not. `epilogue`: the GEMM's
        Epilogue (kernels/epilogue.py; None: none follows it), for a model trained
        with the epilogue block; a model without blocks never sees it."""
        return self._scored(problem, candidates, probe, epilogue, reach=False)[0]

    def rank_with_reach(self, problem: Problem, candidates: Sequence[Candidate], epilogue=None):
        """(scores as `rank` gives them, the reach model's predicted gaps to ATen over the same
        features; NaN where it has no opinion): verify's budget (decide/gap_policy.py). Needs
        `reach`."""
        return self._scored(problem, candidates, True, epilogue, reach=True)

    def _scored(self, problem, candidates, probe: bool, epilogue, reach: bool) -> tuple:
        """(scores, reach scores or None): the candidates featurised once, scored by the model
        and, when `reach`, by the reach model."""
        if problem.dtype not in self.own_dtypes:
            raise RankerUnavailable(
                f"dtype-{problem.dtype}",
                f"kselect: the cost model has no "
                f"{problem.dtype} data (trained on {list(self.own_dtypes)}) -- stock autotuning",
            )
        from kselect.selector.model.feature_blocks import with_blocks
        from kselect.selector.model.features import featurize_candidates

        scores = np.full(len(candidates), np.nan)  # no rows for a backend: no opinion on it
        gaps = np.full(len(candidates), np.nan) if reach else None
        if backends_of(candidates) <= self.backends:  # the usual case, one cheap pass
            seen, rows = slice(None), candidates
        else:
            seen = [i for i, c in enumerate(candidates) if c.backend in self.backends]
            rows = [candidates[i] for i in seen]
        if rows:
            tp = time.perf_counter()
            aten_kernel = self.aten_kernel(problem) if probe else None
            t0 = time.perf_counter()
            device = self.model.fingerprint_for(self.fingerprint)
            X = featurize_candidates(problem, rows, device, aten_kernel)
            X = with_blocks(X, self.feature_blocks, rows, device, epilogue, problem=problem)
            t1 = time.perf_counter()
            scores[seen] = self.model.selection_cost(X)
            t2 = time.perf_counter()
            if reach:
                gaps[seen] = self.reach.scores(X)
            # where this thread's latest ranking spent its time (copied into the decision record)
            self._phases.ms = {
                "aten_probe": (t0 - tp) * 1e3,
                "featurize": (t1 - t0) * 1e3,
                "trees": (t2 - t1) * 1e3,
                **({"reach_trees": (time.perf_counter() - t2) * 1e3} if reach else {}),
            }
        return scores, gaps

    def nearest_order(self, problem: Problem, candidates: Sequence[Candidate]) -> list[int]:
        """Indices of `candidates` the nearest-shape lookup would time, most preferred first
        (empty without a table)."""
        if self.nearest is None:
            return []
        index = KEY_INDEX(candidate_keys(candidates))
        kind = shape_kind(problem.layout, problem.op, problem.dtype)
        return [index[k] for k in self.nearest.preferences(problem.M, problem.N, problem.K, kind) if k in index]


class MeasuredRanker:
    """Scores = log of measured time from a table {problem key: {candidate key: ms}}."""

    log_time_scores = True

    def __init__(self, table: Mapping[str, Mapping[str, float]], name: str = "measured"):
        self.table = {p: {c: float(t) for c, t in row.items()} for p, row in table.items()}
        import hashlib
        import json

        self.ident = name + ":" + hashlib.sha256(json.dumps(self.table, sort_keys=True).encode()).hexdigest()[:12]
        self.backends = frozenset(k.split(":", 1)[0] for row in self.table.values() for k in row)
        # the ops of the problems it has rows for and the scaling kinds of its scaled_mm ones
        self.ops = frozenset(map(key_op, self.table))
        self.scalings = frozenset(filter(None, map(key_scaling, self.table)))

    @classmethod
    def from_csv(cls, path: str | Path) -> "MeasuredRanker":
        """CSV with columns problem, candidate, ms (one row per measurement)."""
        table: dict = {}
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                table.setdefault(row["problem"], {})[row["candidate"]] = float(row["ms"])
        return cls(table, name=Path(path).stem)

    def rank(self, problem: Problem, candidates: Sequence[Candidate]) -> np.ndarray:
        row = self.table.get(problem.key)
        if not row:
            raise RankerUnavailable(
                f"no-measurements:{problem.key}", f"kselect: no measurements for {problem.key} -- stock autotuning"
            )
        return np.array(
            [math.log(row[c.key]) if row.get(c.key, 0) > 0 else math.nan for c in candidates], dtype=np.float64
        )
