"""The graph Inductor is lowering: its GEMMs (read to warm the ranker for them) and the epilogue
of the GEMM being lowered (the pointwise ops after it, kernels/epilogue.py)."""

from __future__ import annotations

import weakref

from kselect.kernels.op_names import ADDMM, BMM, MM
from kselect.selector.compat.signatures import layout_char


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
        aten.mm.default: (MM, 0),
        aten.addmm.default: (ADDMM, 1),
        aten.bmm.default: (BMM, 0),
        aten.baddbmm.default: (BMM, 1),
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
# aten op names -> epilogue op kinds (epilogue.OP_KINDS); mul/add and their kin are told apart
# by what they read (another tensor, or constants and the epilogue's own values)
_ACTIVATIONS = frozenset(
    "relu gelu silu sigmoid tanh erf erfc exp exp2 expm1 log log1p sqrt rsqrt softplus hardswish "
    "hardsigmoid hardtanh leaky_relu elu mish clamp clamp_min clamp_max".split()
)
_PRODUCTS, _SUMS = frozenset({"mul", "div"}), frozenset({"add", "sub"})
_ARITH = frozenset({"neg", "pow", "reciprocal", "where", "maximum", "minimum"})
_CASTS = frozenset({"convert_element_type", "_to_copy", "to"})


def _aten_name(node) -> str | None:
    """The op name of an aten/prims call node (`mul` of aten.mul.Tensor), else None."""
    import torch

    if getattr(node, "op", None) != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return None
    return node.target.overloadpacket.__name__


def _is_view(node) -> bool:
    return _aten_name(node) in _ORDER_KEEPING_VIEWS


def _is_pointwise(node) -> bool:
    import torch

    return _aten_name(node) is not None and torch.Tag.pointwise in node.target.tags


def _nbytes(node) -> int | None:
    """The bytes of the tensor an FX node makes (its `meta["val"]`); None for a symbolic size
    or no tensor."""
    val = getattr(node, "meta", {}).get("val")
    try:
        return int(val.element_size()) * _numel(_static(val.shape))
    except (AttributeError, TypeError):
        return None


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _tensor_args(node) -> list:
    """The FX nodes of tensors a node reads (not a symbolic size's node)."""
    import torch
    from torch.fx import Node

    flat = list(node.args) + list(node.kwargs.values())
    return [a for a in flat if isinstance(a, Node) and isinstance(a.meta.get("val"), torch.Tensor)]


_ORDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph -> {node: position}


def _order(graph) -> dict:
    """Each node's position in `graph` (topological), once per graph and node count."""
    known = _ORDERS.get(graph)
    if known is None or len(known) != len(graph.nodes):
        known = _ORDERS[graph] = {n: i for i, n in enumerate(graph.nodes)}
    return known


def _depends_on(node, gemm, order: dict) -> bool:
    """Whether `node` is computed from `gemm`'s output: a walk back from it over the nodes
    after the GEMM only (nothing before it in topological order can depend on it)."""
    start, todo, seen = order[gemm], [node], set()
    while todo:
        n = todo.pop()
        if n is gemm:
            return True
        if n in seen or order.get(n, -1) <= start:
            continue
        seen.add(n)
        todo.extend(n.all_input_nodes)
    return False


def _kind(node, region: set, gemm) -> str:
    name = _aten_name(node)
    reads_other = any(a is not gemm and a not in region for a in _tensor_args(node))
    if name in _ACTIVATIONS:
        return "activation"
    if name in _PRODUCTS:
        return "mul_tensor" if reads_other else "arith"
    if name in _SUMS:
        return "add_tensor" if reads_other else "arith"
    if name in _ARITH:
        return "arith"
    return "cast" if name in _CASTS else "other"


def _materialized(node):
    """The node whose buffer a view reads (through views), the node itself otherwise."""
    while _is_view(node) and node.args and node.args[0] is not None:
        node = node.args[0]
    return node


def describe_epilogue(gemm):
    """The Epilogue of FX node `gemm` (kernels/epilogue.py): the connected pointwise
    ops fed by its output element by element (through order-keeping views), each reading
    besides it only tensors that do not depend on it -- what a template could fuse into its
    store. An op that needs another element of the output (a reduction, a slice, a permute)
    ends the epilogue there; so does one that reads a value derived from the output that way."""
    from kselect.kernels.epilogue import OP_KINDS, Epilogue

    order = _order(gemm.graph)
    region: list = []
    members: set = set()
    todo = list(gemm.users)
    while todo:
        n = todo.pop(0)
        if n in members or not (_is_view(n) or _is_pointwise(n)):
            continue
        outside = [a for a in _tensor_args(n) if a is not gemm and a not in members]
        if _is_view(n) and outside:  # a view of something else
            continue
        if any(_depends_on(a, gemm, order) for a in outside):  # reads the output another way
            continue
        region.append(n)
        members.add(n)
        todo.extend(n.users)
    ops = sorted((n for n in region if not _is_view(n)), key=order.get)
    extras = {a for n in ops for a in _tensor_args(n) if a is not gemm and a not in members}
    written = {_materialized(n) for n in region if any(u not in members for u in n.users)}
    escapes = gemm in written or any(u not in members for u in gemm.users)
    kinds = [_kind(n, members, gemm) for n in ops]
    return Epilogue(
        ops=tuple(_aten_name(n) for n in ops),
        kinds=tuple((k, kinds.count(k)) for k in OP_KINDS if k in kinds),
        extra_inputs=len(extras),
        extra_bytes=_total(_nbytes(a) for a in extras),
        out_bytes=_total(_nbytes(n) for n in written if n is not gemm),
        gemm_out_bytes=_nbytes(gemm),
        gemm_output_escapes=escapes,
        fusable=bool(ops),
    )


def _total(sizes) -> int | None:
    sizes = list(sizes)
    return None if any(s is None for s in sizes) else sum(sizes)


def current_epilogue():
    """The Epilogue of the GEMM Inductor is lowering right now; NO_EPILOGUE when there is no
    FX node to ask (outside a compile, a GEMM built by another lowering)."""
    from torch._inductor.virtualized import V

    from kselect.kernels.epilogue import NO_EPILOGUE

    try:
        node = V.graph.current_node
    except (AttributeError, AssertionError):  # no graph being lowered
        return NO_EPILOGUE
    if node is None or getattr(node, "op", None) != "call_function":
        return NO_EPILOGUE
    return describe_epilogue(node)
