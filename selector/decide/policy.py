"""Rankers score a problem's candidates; the policy turns scores into the kept set.

A `Ranker` answers one question: `rank(problem, candidates) -> scores` (lower = predicted
faster; NaN or inf = no opinion / cannot run). It raises `RankerUnavailable` when it has no
data for this device, dtype or problem, and the selector leaves that GEMM to stock Inductor.

- `CostModelRanker`: the learned XGBoost cost model (the real one, GPU).
- `MeasuredRanker`: a table of measured times (candidate key -> ms per problem key); honest
  where a model cannot serve (CPU CI, a device without a trained model).

`choose_kept` is the policy: predict keeps the top-1; verify keeps an adaptive top-k (min_k
when #1 is far ahead, more when close, never more than the cap) plus ATen as a safety net.

A ranker may say which backends it has data for (`backends`). Candidates of any other
backend (FlyDSL under a model trained on NVIDIA data) are not scored by guesswork: predict
never picks them; verify benchmarks the first few in the order Inductor listed them, inside
the cap, so a newcomer gets measured without pretending the model knows it.
"""

from __future__ import annotations

import csv
import math
import operator
import threading
import time
from pathlib import Path
from typing import Callable, Hashable, Mapping, Protocol, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.selector.config import DEFAULTS
from kselect.selector.decide.aten_probe import AtenKernelFacts
from kselect.selector.decide.candidate_memo import IdentityMemo
from kselect.selector.decide.nearest import NearestTableError, shape_kind
from kselect.selector.decide.nearest import from_metadata as nearest_from_metadata
from kselect.selector.inductor.epilogue import fuses_epilogue


class RankerUnavailable(RuntimeError):
    """This ranker cannot score this device / dtype / problem; the message says why."""

    def __init__(self, cause: str, message: str):
        super().__init__(message)
        self.cause = cause


# Models whose metadata predates the `backends` field were all trained on the collector's
# default backends.
LEGACY_MODEL_BACKENDS = ("aten", "triton")
# verify mode: most candidates of backends the ranker has no data for that one GEMM benchmarks
UNSEEN_KEEP = 2
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

    def __init__(self, model, fingerprint: Mapping | None):
        self.model = model
        #: scores are predicted log(time / ATen's time): the policy reads them as gaps to cuBLAS
        self.aten_gap_scores = bool(getattr(model, "aten_relative", False))
        self.fingerprint = fingerprint
        meta = getattr(model, "metadata_", {}) or {}
        training = meta.get("training") if isinstance(meta.get("training"), Mapping) else {}
        self.dtypes = tuple(meta.get("dtypes") or training.get("dtypes") or ("bf16",))
        self.backends = frozenset(meta.get("backends") or training.get("backends") or LEGACY_MODEL_BACKENDS)
        # what decides its rankings: the trees (data + training time) and the selection cascade
        self.ident = (
            "model:"
            + str(meta.get("dataset_hash") or "")[:16]
            + ":"
            + str(meta.get("trained_at"))
            + f":c{getattr(model, 'cascade_trees', '')}/{getattr(model, 'cascade_keep', '')}"
        )
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
            problems = [Problem(4096, 4096, 4096, dtype, "nt") for dtype in self.dtypes]
        warmed = self._warmed_classes
        ranked: list[Candidate] = []
        for problem in problems:
            if problem.dtype not in self.dtypes:
                continue  # its decisions go to stock Inductor anyway
            # a size class is its memoised tile tuples (one object per class) and decompose-k's use
            tiles = tuple(
                template_space(problem, t, "exhaustive")
                for t in ("mm", "persistent_tma")
                if problem.op != "bmm" or t == "mm"
            )
            key = (problem.dtype, problem.op == "bmm", tuple(map(id, tiles)), uses_decompose_k(problem))
            if key in warmed:
                continue
            candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
            self.rank(problem, candidates, probe=False)  # stand-in problems: nothing to probe
            warmed.add(key)
            ranked += candidates
        if rows:
            for m in WARM_ROW_CLASSES:  # tile spaces depend on the sizes only, not the dtype: once each
                for template in ("mm", "persistent_tma"):
                    template_space(Problem(m, 4096, 4096, self.dtypes[0], "nt"), template, "exhaustive")
        return list(dict.fromkeys(ranked))

    def rank(self, problem: Problem, candidates: Sequence[Candidate], probe: bool = True) -> np.ndarray:
        """Scores of `candidates`; `probe`: read what cuBLAS launches for `problem` (the
        ATen-kernel columns) -- warm_up's stand-in problems need not."""
        if problem.dtype not in self.dtypes:
            raise RankerUnavailable(
                f"dtype-{problem.dtype}",
                f"kselect: the cost model has no "
                f"{problem.dtype} data (trained on {list(self.dtypes)}) -- stock autotuning",
            )
        from kselect.selector.model.features import featurize_candidates

        scores = np.full(len(candidates), np.nan)  # no rows for a backend: no opinion on it
        if backends_of(candidates) <= self.backends:  # the usual case, one cheap pass
            seen, rows = slice(None), candidates
        else:
            seen = [i for i, c in enumerate(candidates) if c.backend in self.backends]
            rows = [candidates[i] for i in seen]
        if rows:
            tp = time.perf_counter()
            aten_kernel = self.aten_kernel(problem) if probe else None
            t0 = time.perf_counter()
            X = featurize_candidates(problem, rows, self.model.fingerprint, aten_kernel)
            t1 = time.perf_counter()
            scores[seen] = self.model.selection_cost(X)
            # where this thread's latest ranking spent its time (copied into the decision record)
            self._phases.ms = {
                "aten_probe": (t0 - tp) * 1e3,
                "featurize": (t1 - t0) * 1e3,
                "trees": (time.perf_counter() - t1) * 1e3,
            }
        return scores

    def nearest_order(self, problem: Problem, candidates: Sequence[Candidate]) -> list[int]:
        """Indices of `candidates` the nearest-shape lookup would time, most preferred first
        (empty without a table)."""
        if self.nearest is None:
            return []
        index = _KEY_INDEX(candidate_keys(candidates))
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


def is_aten(c: Candidate) -> bool:
    return c.backend == "aten"


def adaptive_k(
    scores: np.ndarray, cap: int, log_time: bool, margin: float = 0.10, spread: float = 0.5, floor: int = 1
) -> int:
    """How many of the sorted `scores` (ascending, finite) to keep: floor..cap (never more
    than there are).

    With log-time scores, keep those predicted within `margin` (10%) of #1; otherwise (ranking
    margins with no unit) keep those within `spread` standard deviations of #1; never fewer
    than `floor`: a clear winner keeps `floor`, a close race keeps up to `cap`.

    Verify passes floor = the selector's `min_k` (default 1). Held out on the H200 data
    (reports/2026-12-05-cost-model-h200-bf16/adaptive-k.json, leave-one-family-out, ATen safety net
    included) the shipped rank:ndcg model's gaps barely predict who wins: floor 1 (cap 4,
    spread 0.5) keeps 1.33 candidates per GEMM for 94.4 % of the measured best, hardly above
    top-1's 93.8 %; floor 2 keeps 2.21 for 98.5 % (fixed top-2: 2.05 for 98.4 %; re-timed labels,
    reports/2026-12-03-verify-predict-default-30-shapes-retimed-labels; on the collector's labels 1.43 / 94.8 % and 2.28 / 99.0 %). But each
    extra kept Triton template is compiled during lowering, one GEMM after another: on the
    H200 a Llama-3-8B decode step compiled in 11.3 s with top-2 against 7.8 s (plain
    torch.compile: 5.0 s) for the same GPU step time, 0.410 vs 0.412 ms
    (reports/2026-12-03-decode-launch-time-verify-k-decision-latency). Hence floor 1 by default, `min_k=2` where kernel time matters more.
    """
    s = np.sort(np.asarray(scores, dtype=np.float64))
    if len(s) == 0:
        return 0
    if log_time:
        tol = math.log1p(margin)
    else:
        sd = float(np.std(s)) if len(s) > 1 else 0.0
        tol = spread * sd
    n_close = int(np.sum(s - s[0] <= tol + 1e-12))
    return max(1, min(cap, len(s), max(floor, n_close)))


def backends_of(candidates: Sequence[Candidate]) -> frozenset[str]:
    """The backends present (attrgetter in C: ~3x a set comprehension over 2,400 candidates;
    once per size class for the early decision's candidate tuples)."""
    return _BACKENDS(candidates)


_BACKEND = operator.attrgetter("backend")
_BACKENDS = IdentityMemo(lambda candidates: frozenset(map(_BACKEND, candidates)))


def candidate_keys(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """The candidates' keys, as a tuple (once per size class for the early decision's tuples;
    the same tuple object then also has its cache digest remembered)."""
    return _KEYS(candidates)


_KEYS = IdentityMemo(lambda candidates: tuple(c.key for c in candidates))
_KEY_INDEX = IdentityMemo(lambda keys: {k: i for i, k in enumerate(keys)})  # key -> index, per keys tuple


def aten_indices(candidates: Sequence[Candidate]) -> np.ndarray:
    """Indices of the ATen candidates, ascending (once per size class for the early decision's
    tuples: a Python pass over ~2,400 candidates was most of the policy's time)."""
    return _ATEN(candidates)


_ATEN = IdentityMemo(
    lambda candidates: np.flatnonzero(
        np.fromiter((c.backend == "aten" for c in candidates), dtype=bool, count=len(candidates))
    )
)


def unseen_backends(candidates: Sequence[Candidate], ranker) -> list[int]:
    """Indices of candidates whose backend `ranker` has no data for, in listed order."""
    known = getattr(ranker, "backends", None)
    if known is None or backends_of(candidates) <= set(known):
        return []
    return [i for i, c in enumerate(candidates) if c.backend not in known]


# predict: a template must out-score ATen by this many standard deviations of the GEMM's
# scores to be picked (see prefer_aten for the held-out evidence and the compile-time reason);
# the default of the aten_margin setting (config.SelectorSettings)
ATEN_MARGIN_SD = DEFAULTS.aten_margin


def prefer_aten(candidates: Sequence[Candidate], scores: np.ndarray, top: int, margin_sd: float) -> int | None:
    """predict: ATen's index when the top-1 is a template that does not out-score ATen by
    `margin_sd` standard deviations of the finite scores (else None, keep the top-1).

    Every template predict picks is compiled (~0.5 s per GEMM on the H200, reports/2026-12-03-predict-decision-cost-exhaustive-end-to-end)
    while ATen compiles nothing, and a close call is where the model is most often wrong. Held
    out on the re-timed labels (reports/2026-12-05-cost-model-h200-bf16/compile-aware.json, leave-one-
    family-out, the selector's own scores) the top-1 alone gets 93.79 % of the measured best,
    picks a template for 5.7 % of the GEMMs and is slower than cuBLAS on 0.74 %; with a 0.5 sd
    margin 92.50 %, 3.5 % and 0.50 %; 1 sd 92.42 %, 2.2 %, 0.50 %; 2 sd 92.33 %, 0.25 %, 0 %
    (cuBLAS always: 92.29 %). So the templates the model is 0.5-2 sd sure of buy ~0.2 % of
    kernel time for ~3 % of GEMMs compiling a template each. Predict's promise is plain
    torch.compile's compile time, hence 2 sd by default (reports/2026-12-03-predict-compile-first-decision-forest-serving; 0.5 was the earlier default): on the
    Llama-3-8B decode graph the one such pick (lm_head, 1.3 sd) cost ~0.6 s of a 5.7 s compile
    for 0.8 % of the GPU step (reports/2026-12-03-decision-per-size-class-predict-compile). 0 = the top-1, for kernel quality."""
    if margin_sd <= 0 or is_aten(candidates[top]):
        return None
    aten = aten_indices(candidates)
    aten = aten[np.isfinite(scores[aten])]
    if not len(aten):
        return None
    finite = scores[np.isfinite(scores)]
    sd = float(np.std(finite)) if len(finite) > 1 else 0.0
    a = int(aten[np.argmin(scores[aten])])
    return a if scores[a] - scores[top] < margin_sd * sd else None


# Knobs that change how a tile runs, not its shape: candidates equal but for these are one
# family, and verify keeps only the best-ranked member of each (first_of_each_family).
FAMILY_FREE_KNOBS = frozenset({"GROUP_M", "num_stages", "num_warps"})


def tile_family(c: Candidate) -> tuple:
    """(backend, template, the knobs that shape the tile): BM/BN/BK, decompose-k's split."""
    return (c.backend, c.template, tuple(p for p in c.params if p[0] not in FAMILY_FREE_KNOBS))


def first_of_each_family(
    order: Sequence[int], candidates: Sequence[Candidate], n: int, too_slow: Callable[[int], bool] | None = None
) -> list[int]:
    """The first `n` of `order` (best first) that start a new tile family; after the first,
    a candidate `too_slow(i)` says is too costly to compile is passed over, and the next
    candidate takes its place -- another member of its family (other warps or stages) may
    compile quicker (see CompilePrice).

    Why families: the model's near-ties are mostly one tile with other warps or stages. Of the 49
    held-out GEMMs where the adaptive rule keeps two or more, 35 kept two members of one family
    (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k s3: lm_head kept BN256 S3 with 8 and with 4 warps, 0.2 % apart,
    each a ~0.2-0.4 s compile). Held out (404 shapes, leave-one-family-out), keeping one per
    family at the same count: fixed top 4 gets 99.15 % of the best instead of 99.01 (oracle
    shapes 97.84 vs 97.36, within 1 % 71.7 vs 69.8 %), top 3 98.92 vs 98.73, top 2 98.46 vs
    98.43; the adaptive default 94.39 vs 94.40 % (oracle within 1 %: 60.4 vs 59.4 %)."""
    seen: set = set()
    out: list[int] = []
    for i in order:
        if len(out) >= n:
            break
        fam = tile_family(candidates[i])
        if fam in seen or (out and too_slow is not None and too_slow(int(i))):
            continue
        seen.add(fam)
        out.append(int(i))
    return out


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


# Models whose scores are predicted gaps to ATen (objective 'reg:aten': log(time / ATen's time)).
# verify: (bound, n) tiers -- the best-ranked template's predicted gap <= bound times n
# templates (the first tier that holds), past the last bound none (ATen is timed anyway); from
# NEAREST_SLOT_FROM templates on, the last is the nearest measured shape's pick (the model's
# sidecar table, selector/decide/nearest.py).
# predict: a template only when predicted at least PREDICT_GAP_MARGIN faster than ATen.
# Held out by model family on the H200 data (reports/2026-12-05-headroom-h200-bf16): the cap
# (4) wherever a template is predicted within 0.30 of ATen (the training target's clip, so on
# every GEMM of that data) keeps 89.0 % of the measured gain over ATen with the schema-v2 model
# (86.0 % with schema v1): the model's first 3 families + the lookup's pick; the model's 4 alone
# 84.9 %. With schema v1, cheaper tiers chosen inside the training folds kept 83.0 % at 2.79
# templates (nested; the former 0.10 -> 4, 0.20 -> 2, 0.30 -> 1: 83.8 % at 2.11). The margin
# keeps 2.6 % with no GEMM slower; a margin chosen inside the training folds kept 2.8 % with one
# GEMM 1.25x slower.
VERIFY_GAP_TIERS = ((0.30, 4),)
PREDICT_GAP_MARGIN = 0.15
# verify with a nearest-shape table: from this many timed templates on, the last slot goes to
# the nearest measured shape's pick (with_nearest_slot)
NEAREST_SLOT_FROM = 2


def templates_to_time(gap: float, tiers: Sequence[tuple[float, int]] = VERIFY_GAP_TIERS) -> int:
    """verify, gap scores: the templates to time for a best predicted gap `gap` (log of the
    template's predicted time over ATen's; NaN or inf: none)."""
    for bound, n in tiers:
        if gap <= bound:
            return int(n)
    return 0


def confident_template(gap: float, margin: float = PREDICT_GAP_MARGIN) -> bool:
    """predict, gap scores: take the best-ranked template over ATen only when it is predicted
    at least `margin` (log time) faster."""
    return bool(gap <= -margin)


def nearest_candidates(ranker, mode: str, problem: Problem, candidates: Sequence[Candidate]) -> list[int]:
    """verify: the ranker's nearest-shape lookup order (CostModelRanker.nearest_order); none for
    predict or a ranker without a table."""
    order = getattr(ranker, "nearest_order", None)
    return order(problem, candidates) if mode == "verify" and order is not None else []


def _passed_over(candidates: Sequence[Candidate], passed: Sequence[int]) -> str:
    """The reason's note on the templates the compile price passed over (the first three named)."""
    slow = list(dict.fromkeys(candidates[i].key for i in passed))  # a candidate may be tried twice
    more = f" and {len(slow) - 3} more" if len(slow) > 3 else ""
    return f"; passed over {len(slow)} slow to compile ({', '.join(slow[:3])}{more})"


def with_nearest_slot(
    model_kept: Callable[[int], list[int]],
    n: int,
    nearest: Sequence[int],
    family: Callable[[int], Hashable],
    usable: Callable[[int], bool],
) -> tuple[list[int], bool]:
    """verify's n timed templates when the nearest-shape lookup gets a slot: the model's first
    n - 1 (`model_kept(count)`, one per tile family) and the lookup's most preferred `nearest`
    candidate whose `family` is not among theirs and that is `usable`; when there is none, the
    model's n-th instead. n < NEAREST_SLOT_FROM: the model's alone. Returns (kept, whether the
    lookup's candidate is among them)."""
    if n < NEAREST_SLOT_FROM or not len(nearest):
        return model_kept(n), False
    kept = model_kept(n - 1)
    families = {family(i) for i in kept}
    for i in nearest:
        if family(int(i)) not in families and usable(int(i)):
            return kept + [int(i)], True
    return model_kept(n), False


def _choose_by_gap(
    candidates: Sequence[Candidate],
    scores: np.ndarray,
    finite: np.ndarray,
    mode: str,
    k: int,
    keep_aten: bool,
    compile_price: CompilePrice | None,
    nearest: Sequence[int] = (),
) -> tuple[list[int], str]:
    """choose_kept for scores that are predicted gaps to ATen: verify times ATen and
    templates_to_time(gap) templates (never more than k, one per tile family, one slot for the
    nearest-shape lookup's pick (with_nearest_slot), the compile price as always); predict
    takes the best template only when confident_template."""
    aten = [int(i) for i in aten_indices(candidates)]
    is_template = np.ones(len(candidates), dtype=bool)
    is_template[aten] = False
    order = finite[np.argsort(scores[finite], kind="stable")]
    templates = order[is_template[order]]
    gap = float(scores[templates[0]]) if len(templates) else math.inf
    if mode == "predict":
        if len(templates) and (confident_template(gap) or not aten):
            return [int(templates[0])], f"predict: template predicted {gap:+.3f} log time from ATen"
        if not aten:
            raise RankerUnavailable("no-scores", "kselect: no scored candidate to pick -- stock")
        return [aten[0]], f"predict: best template predicted {gap:+.3f} from ATen -> ATen"
    n = min(templates_to_time(gap), k, len(templates))
    if not aten and len(templates):
        n = max(n, 1)  # no ATen to fall back on: time at least one template
    too_slow = compile_price.too_slow_after(int(templates[0])) if compile_price is not None and n > 1 else None
    kept, looked_up = with_nearest_slot(
        lambda m: first_of_each_family(templates, candidates, m, too_slow),
        n,
        nearest,
        lambda i: tile_family(candidates[i]),
        lambda i: bool(np.isfinite(scores[i])) and not (too_slow and too_slow(i)),
    )
    why = f"verify: best template predicted {gap:+.3f} from ATen -> {n} template(s), one per tile family"
    if looked_up:
        why += f", the last the nearest measured shape's ({candidates[kept[-1]].key})"
    if compile_price is not None and compile_price.passed:
        why += _passed_over(candidates, compile_price.passed)
    if (keep_aten or not kept) and aten:
        kept.append(aten[0])
        why += " + ATen"
    return kept, why


def choose_kept(
    candidates: Sequence[Candidate],
    scores: np.ndarray,
    mode: str,
    k: int,
    keep_aten: bool,
    log_time: bool,
    unseen: Sequence[int] = (),
    fusion_candidate: bool = False,
    adaptive: bool = True,
    min_k: int = 1,
    aten_margin: float = 0.0,
    compile_price: CompilePrice | None = None,
    aten_gap: bool = False,
    nearest: Sequence[int] = (),
) -> tuple[list[int], str]:
    """Indices of the kept candidates (best first) and a one-line reason.

    `unseen`: candidates of backends the ranker has no data for (their scores are ignored).
    Predict never picks one; verify keeps the first `UNSEEN_KEEP` of them, never more than
    cap - 1 (one slot always goes to the ranker's pick), after the ranked ones.
    `fusion_candidate` (verify; the GEMM feeds a pointwise epilogue): the best-ranked choice
    that can fuse it is kept too, like the ATen safety net, so that measuring the set can weigh
    the epilogue a template absorbs (selector/inductor/epilogue.py) -- the bare-GEMM ranking cannot.
    `adaptive=False`: verify keeps the cap, whatever the scores' gaps; adaptive keeps
    min_k..cap by the gaps (see adaptive_k for the evidence on min_k). Either way the kept
    ranked candidates are the best of distinct tile families (first_of_each_family).
    `aten_margin` (predict, ranking scores, keep_aten): a template top-1 must out-score ATen by
    that many standard deviations, else ATen is picked (prefer_aten); measured-time rankers
    (log_time) are taken at their word.
    `compile_price` (verify): a ranked template predicted to compile too long next to the
    top-1 is passed over for the next candidate (CompilePrice).
    `aten_gap`: the scores are predicted gaps to ATen (a 'reg:aten' model): verify times ATen and
    as many templates as templates_to_time gives the best gap, predict takes a template only
    when confident_template (unseen backends and the epilogue rule as above do not apply);
    `nearest` (with `aten_gap`, verify): candidates the nearest-shape lookup would time, most
    preferred first (CostModelRanker.nearest_order); one of the timed slots goes to the first
    usable of them (with_nearest_slot)."""
    scores = np.array(scores, dtype=np.float64)
    unseen = [int(i) for i in unseen]
    scores[unseen] = np.nan
    finite = np.flatnonzero(np.isfinite(scores))
    if len(finite) == 0:
        raise RankerUnavailable("no-scores", "kselect: the ranker scored none of the candidates -- stock")
    if aten_gap and not unseen:
        return _choose_by_gap(candidates, scores, finite, mode, k, keep_aten, compile_price, nearest)
    names = sorted({candidates[i].backend for i in unseen})
    if mode == "predict":
        note = f"; {len(unseen)} unscored {names} never picked" if unseen else ""
        top = int(finite[np.argmin(scores[finite])])  # the first of the best, as a stable sort's
        aten = prefer_aten(candidates, scores, top, aten_margin) if keep_aten and not log_time else None
        if aten is not None:
            return [int(aten)], (
                f"predict: top-1 {candidates[top].key} within {aten_margin:g} sd of "
                f"ATen's score -> ATen (no template to compile){note}"
            )
        return [top], "predict: top-1" + note
    order = finite[np.argsort(scores[finite], kind="stable")]
    n_new = min(UNSEEN_KEEP, len(unseen), max(k - 1, 0))
    n = min(adaptive_k(scores[order], k, log_time, floor=min_k) if adaptive else min(k, len(order)), k - n_new)
    too_slow = compile_price.too_slow_after(int(order[0])) if compile_price is not None and n > 1 else None
    kept = first_of_each_family(order, candidates, n, too_slow) + unseen[:n_new]
    why = f"verify: {'adaptive ' if adaptive else 'fixed '}k={n} of cap {k}, one per tile family"
    if compile_price is not None and compile_price.passed:
        why += _passed_over(candidates, compile_price.passed)
    if unseen:
        why += f" + {n_new} of {len(unseen)} unscored {names} (no model data) in listed order"
    if fusion_candidate and not any(fuses_epilogue(candidates[i]) for i in kept):
        fusing = [int(i) for i in order if fuses_epilogue(candidates[i])]
        if fusing:
            kept.append(fusing[0])
            why += " + best epilogue-fusing template"
    if keep_aten:
        aten = [int(i) for i in aten_indices(candidates) if i not in kept]
        if aten:
            kept.append(aten[0])
            why += " + ATen safety net"
    return kept, why


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
