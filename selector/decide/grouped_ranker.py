"""The ranker of `_grouped_mm`: the grouped model's predicted gap to ATen per candidate, and how a
device's serving ranker comes to hold the op.

A CostModelRanker holds grouped_mm only with a grouped model joined to it (its `grouped`; its
`ops` then include "grouped_mm"), a MeasuredRanker where its table has grouped problems. The pipeline
asks `for_problem` which ranker scores a problem: a GroupedProblem goes to the joined grouped
ranker. Scores are natural-log gaps to ATen (the model predicts log2; the policy reads gaps as
a 'reg:aten' model's, selector/decide/gap_policy.py).
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.model.artifact import ModelError
from kselect.selector.ops.grouped_mm import GROUPED_MM
from kselect.selector.warn import warn_once


class GroupedRanker:
    """Scores a grouped GEMM's candidates with a GroupedCostModel, on the problem the compile
    sees (uniform routing: docs/grouped-mm.md). Features read the model's training card (its SM
    count, shared memory), as the cost model's do: it serves only that card or its architecture
    (model/grouped_model.py: grouped_model_for)."""

    log_time_scores = False
    aten_gap_scores = True
    reads_epilogue = False

    def __init__(self, model):
        self.model = model
        meta = model.metadata_
        self.fingerprint = model.fingerprint
        self.ops = frozenset({GROUPED_MM.name})
        self.dtypes = model.dtypes
        self.backends = model.backends
        self.ident = "grouped:" + str(meta.get("dataset_hash") or "")[:16] + ":" + str(meta.get("trained_at"))
        self._phases = threading.local()

    def last_phases_ms(self) -> dict:
        return dict(getattr(self._phases, "ms", {}))

    def rank(self, problem: GroupedProblem, candidates: Sequence[Candidate]) -> np.ndarray:
        from kselect.selector.model.grouped_features import featurize_grouped

        if problem.dtype not in self.dtypes:
            raise RankerUnavailable(
                f"grouped-dtype-{problem.dtype}",
                f"kselect: the grouped model has no {problem.dtype} data (trained on {list(self.dtypes)}) "
                "-- stock autotuning",
            )
        scores = np.full(len(candidates), np.nan)  # a backend it has no data for: no opinion
        seen = [i for i, c in enumerate(candidates) if c.backend in self.backends]
        if seen:
            t0 = time.perf_counter()
            X = featurize_grouped(problem.with_routing("uniform"), [candidates[i] for i in seen], self.fingerprint)
            t1 = time.perf_counter()
            scores[seen] = self.model.predict(X) * math.log(2.0)
            self._phases.ms = {"featurize": (t1 - t0) * 1e3, "trees": (time.perf_counter() - t1) * 1e3}
        return scores


def load_grouped_ranker(path: str | Path) -> GroupedRanker | None:
    """The grouped ranker of the model file `path`, or None with one warning naming the file and
    the problem (a stale schema, a broken file): grouped_mm then goes to stock autotuning."""
    from kselect.selector.model.grouped_model import GroupedCostModel

    try:
        return GroupedRanker(GroupedCostModel.load(path))
    except ModelError as exc:
        warn_once("grouped-model", f"kselect: cannot use grouped model: {exc} -- grouped_mm goes to stock autotuning")
        return None


def grouped_beside(fingerprint: Mapping, named=None) -> GroupedRanker | None:
    """The grouped model for this card beside the serving cost model -- the folder of the model
    file the user `named`, else the shipped models/ (model/grouped_model.py) -- as a ranker;
    None where there is none, or (one warning) it cannot serve: grouped_mm then goes to stock."""
    from kselect.selector.model.grouped_model import grouped_model_for

    try:
        path = grouped_model_for(fingerprint, Path(named).parent if named is not None else None)
    except (OSError, ModelError) as exc:  # the folder or a sidecar cannot be read: as if none were there
        warn_once("grouped-model", f"kselect: cannot look up a grouped model: {exc} -- grouped_mm goes to stock")
        return None
    return load_grouped_ranker(path) if path is not None else None


def for_problem(ranker, problem):
    """The ranker that scores `problem`: a grouped GEMM's is the one joined to the serving
    ranker (a MeasuredRanker scores it itself, by key); a GEMM of a dtype the serving model
    lacks, the card's model of that dtype joined to it (`by_dtype`); any other, the ranker."""
    if not isinstance(problem, GroupedProblem):
        return (getattr(ranker, "by_dtype", None) or {}).get(problem.dtype, ranker)
    grouped = getattr(ranker, "grouped", None)
    if grouped is not None:
        return grouped
    if GROUPED_MM.name in (getattr(ranker, "ops", None) or ()) and hasattr(ranker, "table"):
        return ranker
    raise RankerUnavailable("grouped-unheld", "kselect: the ranker holds no grouped_mm model -- stock autotuning")
