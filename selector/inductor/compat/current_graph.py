"""The graph Inductor is lowering: its GEMMs (read to warm the ranker for them) and whether the
GEMM being lowered feeds a pointwise op a template can fuse (the epilogue check)."""

from __future__ import annotations

from kselect.selector.inductor.compat.signatures import layout_char


def lowering_graph():
    """The GraphLowering Inductor is running in this thread, or None (outside a compile)."""
    from torch._inductor.virtualized import NullHandler, V

    graph = V.graph
    return None if isinstance(graph, NullHandler) else graph


def graph_gemm_problems(graph) -> list:
    """The GEMMs of the FX graph `graph` lowers (Inductor's GraphLowering: an fx Interpreter over
    `graph.module`), as Problems in graph order: aten mm, addmm, bmm and baddbmm nodes whose
    operand sizes are known (a symbolic size is skipped: the warm-up it serves is an
    optimisation). Read when the graph's first GEMM is lowered, so the ranker warms what the
    graph's decisions need (rankers.CostModelRanker.warm_up)."""
    import torch

    from kselect.kernels.problem import Problem, ProblemError

    aten = torch.ops.aten
    ops = {
        aten.mm.default: ("mm", 0),
        aten.addmm.default: ("addmm", 1),
        aten.bmm.default: ("bmm", 0),
        aten.baddbmm.default: ("bmm", 1),
    }
    out = []
    for node in graph.module.graph.nodes:
        op, first = ops.get(node.target, (None, 0)) if node.op == "call_function" else (None, 0)
        if op is None:
            continue
        try:
            a, b = (arg.meta["val"] for arg in node.args[first : first + 2])
            (*batch, m, k), n = _static(a.shape), _static(b.shape)[-1]
            layout = layout_char(_static(a.stride()), m, k) + layout_char(_static(b.stride()), k, n)
            out.append(Problem(M=m, N=n, K=k, dtype=a.dtype, layout=layout, op=op, batch=batch[0] if batch else 1))
        except (AttributeError, KeyError, TypeError, ValueError, ProblemError):
            continue  # not a plain tensor, a symbolic size, an odd stride or dtype: not warmed
    return out


def _static(sizes) -> list:
    """Plain ints, or TypeError: int() of a symbolic size would add a guard to the compile."""
    if not all(type(s) is int for s in sizes):
        raise TypeError(f"symbolic sizes {list(sizes)}")
    return list(sizes)


# views that keep the GEMM's element order: an epilogue behind them still reads each output
# element where the template stores it (slices, splits, permutes do not: RoPE, chunked SwiGLU)
_ORDER_KEEPING_VIEWS = frozenset({"view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "alias"})


def _fusible_use(node) -> bool:
    import torch

    if getattr(node, "op", None) != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if node.target.overloadpacket.__name__ in _ORDER_KEEPING_VIEWS:
        return any(_fusible_use(u) for u in node.users)
    return torch.Tag.pointwise in node.target.tags


def output_feeds_pointwise() -> bool:
    """Whether the GEMM Inductor is lowering right now feeds a pointwise op element by element
    (directly or through order-keeping views): an epilogue a Triton template can fuse.
    False when there is no FX node to ask."""
    from torch._inductor.virtualized import V

    try:
        node = V.graph.current_node
    except (AttributeError, AssertionError):  # no graph being lowered
        return False
    if node is None or getattr(node, "op", None) != "call_function":
        return False
    return any(_fusible_use(u) for u in node.users)
