"""A GEMM whose M is dynamic: the sizes it is ranked at, and how the picks at those sizes become one
kept set -- the union (never more than stock Inductor would tune; the ATen safety net kept if any
size kept it). The decider ranks at each size (decide/decider.py, `Decider.decide_per_size`)."""

from __future__ import annotations

from kselect.selector.compat import inductor_settings

# the sizes a dynamic M is ranked at where Inductor sets no `multi_kernel_hints`: decode-sized
# to prefill-sized row counts, a factor of 4 apart
DYNAMIC_M_SIZES = (16, 64, 256, 1024, 4096)


def dynamic_m_sizes(hint: int) -> list[int]:
    """The sizes a dynamic M is ranked at: the compile's hint first, then Inductor's
    `multi_kernel_hints` where set, else kselect's own `DYNAMIC_M_SIZES`."""
    configured = inductor_settings.multi_kernel_hints()
    sizes = configured if configured else list(DYNAMIC_M_SIZES)
    return [hint] + [s for s in dict.fromkeys(sizes) if s != hint and s > 0]


def round_robin(picks: list[list[int]]) -> list[int]:
    """Each list's first index, then each list's second, ..., without repeats."""
    out: list[int] = []
    for rank in range(max(map(len, picks), default=0)):
        out.extend(p[rank] for p in picks if rank < len(p) and p[rank] not in out)
    return out


def within(kept: list[int], limit: int, candidates) -> list[int]:
    """The first `limit` of `kept` (at least one); with room for two or more, an ATen choice
    that was kept stays in (verify's safety net) in place of the last."""
    if len(kept) <= max(limit, 1):
        return kept
    head = kept[: max(limit, 1)]
    aten = next((i for i in kept if candidates[i].backend == "aten"), None)
    if aten is not None and aten not in head and len(head) > 1:
        head[-1] = aten
    return head
