"""The policy: a GEMM's scores -> the kept set (`choose_kept`).

predict keeps the top-1; verify keeps an adaptive top-k (min_k when #1 is far ahead, more when
close, never more than the cap) of distinct tile families (decide/families.py) plus ATen as a
safety net. Scores that are predicted gaps to ATen follow decide/gap_policy.py.

A ranker may say which backends it has data for (`backends`). Candidates of any other
backend (FlyDSL under a model trained on NVIDIA data) are not scored by guesswork: predict
never picks them; verify benchmarks the first few in the order Inductor listed them, inside
the cap, so a newcomer gets measured without pretending the model knows it.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from kselect.kernels.candidate import Candidate
from kselect.kernels.epilogue import fuses_epilogue
from kselect.selector.config import DEFAULTS
from kselect.selector.decide.candidate_sets import aten_indices, is_aten
from kselect.selector.decide.families import first_of_each_family
from kselect.selector.decide.gap_policy import choose_by_gap
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.model.compile_price import CompilePrice, passed_over_note

# verify mode: most candidates of backends the ranker has no data for that one GEMM benchmarks
UNSEEN_KEEP = 2


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
    reach: tuple | None = None,
) -> tuple[list[int], str]:
    """Indices of the kept candidates (best first) and a one-line reason.

    `unseen`: candidates of backends the ranker has no data for (their scores are ignored).
    Predict never picks one; verify keeps the first `UNSEEN_KEEP` of them, never more than
    cap - 1 (one slot always goes to the ranker's pick), after the ranked ones.
    `fusion_candidate` (verify; the GEMM feeds a pointwise epilogue): the best-ranked choice
    that can fuse it is kept too, like the ATen safety net, so that measuring the set can weigh
    the epilogue a template absorbs (kernels/epilogue.py) -- the bare-GEMM ranking cannot.
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
    usable of them (with_nearest_slot); `reach` (with `aten_gap`, verify): the reach model's gaps
    and tiers, which set how many templates are timed (choose_by_gap)."""
    scores = np.array(scores, dtype=np.float64)
    unseen = [int(i) for i in unseen]
    scores[unseen] = np.nan
    finite = np.flatnonzero(np.isfinite(scores))
    if len(finite) == 0:
        raise RankerUnavailable("no-scores", "kselect: the ranker scored none of the candidates -- stock")
    if aten_gap and not unseen:
        return choose_by_gap(candidates, scores, finite, mode, k, keep_aten, compile_price, nearest, reach)
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
        why += passed_over_note(candidates, compile_price.passed)
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


def with_fusing_few(
    candidates: Sequence[Candidate],
    scores: np.ndarray,
    kept: list[int],
    why: str,
    keep_aten: bool,
    none_in_reach: bool = False,
) -> tuple[list[int], str]:
    """The `epilogue_fusion` option, for a GEMM whose epilogue a template can fuse: the kept set
    (either mode, any ranker) plus the best-scored template that can fuse it and the best-scored
    ATen choice, so Inductor's epilogue-fusion benchmark weighs the fused template against ATen
    and its separate epilogue kernel -- a bare-GEMM ranking cannot. Unchanged when it has both
    or the candidates offer neither; ATen joins only under keep_aten.

    `none_in_reach`: verify's reach budget timed no template (none credibly within its lowest
    tier of ATen, decide/gap_policy.py). The set stays as kept: a template that far behind bare
    cannot win back an epilogue's traffic (a bias + GELU at 2048x4096x4096 on the H200: the
    epilogue alone 0.018 ms against ATen's 0.090, its best-scored template 0.82 bare,
    reports/2026-12-07-gpu-suite-h200)."""
    if none_in_reach:
        return list(kept), f"{why}; its epilogue stays unfused (no template within reach to fuse it)"
    scores = np.asarray(scores, dtype=np.float64)
    finite = np.flatnonzero(np.isfinite(scores))  # NaN: unscored or never to be kept (broken)
    order = [int(i) for i in finite[np.argsort(scores[finite], kind="stable")]]
    kept = list(kept)
    added = []
    if not any(fuses_epilogue(candidates[i]) for i in kept):
        fusing = [i for i in order if fuses_epilogue(candidates[i])]
        if fusing:
            kept.append(fusing[0])
            added.append("best epilogue-fusing template")
    if keep_aten and not any(is_aten(candidates[i]) for i in kept):
        atens = {int(i) for i in aten_indices(candidates)}
        aten = [i for i in order if i in atens]
        if aten:
            kept.append(aten[0])
            added.append("ATen")
    if not added:
        return kept, why
    return kept, f"{why} + {' + '.join(added)} (the epilogue's few, for Inductor's fusion benchmark)"
