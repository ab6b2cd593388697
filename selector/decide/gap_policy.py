"""The policy for scores that are predicted gaps to ATen (a 'reg:aten' model, log(time / ATen's
time)): how many templates verify times beside ATen, the slot for the nearest measured shape's
pick, and when predict takes a template over ATen."""

from __future__ import annotations

import math
from typing import Callable, Hashable, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.selector.decide.candidate_sets import aten_indices
from kselect.selector.decide.families import first_of_each_family, tile_family
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.model.compile_price import CompilePrice, passed_over_note

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


def choose_by_gap(
    candidates: Sequence[Candidate],
    scores: np.ndarray,
    finite: np.ndarray,
    mode: str,
    k: int,
    keep_aten: bool,
    compile_price: CompilePrice | None,
    nearest: Sequence[int] = (),
    reach: tuple[np.ndarray, Sequence[tuple[float, int]]] | None = None,
) -> tuple[list[int], str]:
    """choose_kept for scores that are predicted gaps to ATen: verify times ATen and
    templates_to_time(gap) templates (never more than k, one per tile family, one slot for the
    nearest-shape lookup's pick (with_nearest_slot), the compile price as always); predict
    takes the best template only when confident_template. `reach` (verify): the reach model's
    predicted gaps per candidate and its tiers (selector/model/reach.py): how many templates
    are timed then follows its best template gap instead, none past its last bound."""
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
    if reach is None:
        n, budget = templates_to_time(gap), ""
    else:
        reach_gaps, tiers = reach
        reached = reach_gaps[templates]
        reached = reached[np.isfinite(reached)]
        reach_gap = float(reached.min()) if len(reached) else math.inf
        n, budget = templates_to_time(reach_gap, tiers), f", reach {reach_gap:+.3f}"
    n = min(n, k, len(templates))
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
    why = f"verify: best template predicted {gap:+.3f} from ATen{budget} -> " + (
        f"{n} template(s), one per tile family" if n else "no template within reach"
    )
    if looked_up:
        why += f", the last the nearest measured shape's ({candidates[kept[-1]].key})"
    if compile_price is not None and compile_price.passed:
        why += passed_over_note(candidates, compile_price.passed)
    if (keep_aten or not kept) and aten:
        kept.append(aten[0])
        why += " + ATen"
    return kept, why
