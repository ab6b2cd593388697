"""A GEMM whose M is dynamic: the ranker decides at several sizes and what is kept is the union of
those picks (never more than stock Inductor would tune; the ATen safety net kept if any size kept it)."""

from __future__ import annotations

import dataclasses

from kselect.selector.compat import choice_candidates, inductor_settings
from kselect.selector.decide.candidate_sets import candidate_keys
from kselect.selector.logs import log_decision

# the sizes a dynamic M is ranked at where Inductor sets no `multi_kernel_hints`: decode-sized
# to prefill-sized row counts, a factor of 4 apart
DYNAMIC_M_SIZES = (16, 64, 256, 1024, 4096)


class DynamicSizes:
    """The Selector's decision for a dynamic M: `select` at each size, the union kept. Records
    each in the Selector's `dynamic_picks`."""

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
        gemm_epilogue=None,
    ):
        """A GEMM whose M is dynamic: the ranker decides at each size of `dynamic_m_sizes` (no
        benchmark: scores only), and what is kept is the union of those picks: each size's
        first pick, then each size's second, ...; never more than `stock_size()` (how many
        choices stock Inductor would tune), the ATen safety net kept if any size kept it.

        Where Inductor generated choices per size (multi-kernel dispatch: each choice carries
        the size it was built for, `hint_override`), each size's choices are decided at that
        size and Inductor's dispatch picks among them per size; otherwise the union is the list
        Inductor tunes at its hint. `gemm_epilogue`: as `select`'s, the same at every size. Verify measures that list once, as any kept set, and caches
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
                gemm_epilogue=gemm_epilogue,
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
