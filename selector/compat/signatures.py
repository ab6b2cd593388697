"""A GEMM as Inductor hands it over (input nodes, output size) -> kselect's `Problem` and the
decision-cache key fields; sizes read as Inductor itself tunes with them (dynamic ones by hint)."""

from __future__ import annotations

from kselect.kernels.op_names import ADDMM, BMM, MM, SCALED_MM


def size_hint(expr, hint_override: int | None = None) -> int:
    """A size as the int Inductor itself tunes with: a static size as is; a symbolic one by the
    lowering graph's hint (at `hint_override` where given, as Inductor's multi-kernel dispatch
    reads its sizes). torch 2.13's SizeVarAllocator answers `optimization_hint(_with_override)`;
    2.11's `size_hint(expr, fallback=, hint_override=)`."""
    try:
        return int(expr)
    except TypeError:
        pass
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    if hasattr(sizevars, "optimization_hint_with_override"):  # torch 2.13
        return int(sizevars.optimization_hint_with_override(expr, hint_override))
    return int(sizevars.size_hint(expr, hint_override=hint_override))  # torch 2.11


def is_symbolic(expr) -> bool:
    """Whether a size is symbolic (a dynamic dimension) rather than a plain int."""
    try:
        int(expr)
    except TypeError:
        return True
    return False


def layout_char(stride, rows: int, cols: int) -> str:
    if cols == 1 or stride[-1] == 1:
        return "n"
    if rows == 1 or stride[-2] == 1:
        return "t"
    raise ValueError(f"operand with strides {stride} is neither row- nor column-major")


def gemm_signature(nodes, out_size, op_name: str | None = None):
    """Inductor input nodes + output size -> (Problem, cache-key fields, device).

    A is an input whose rows are M (not a broadcast bias); K is its last dim; B a later input
    shaped (K, N) (layout from its strides) or (N, K) (a Linear weight, i.e. transposed). Any
    other input of N columns is a bias: addmm. The key fields carry every input's sizes,
    strides and dtype, so decisions never cross layouts.
    """
    from kselect.kernels.precision import gemm_dtype
    from kselect.kernels.problem import Problem

    out = [size_hint(s) for s in out_size]
    batch = out[0] if len(out) == 3 else 1
    M, N = out[-2], out[-1]
    shaped = []
    for n in nodes:
        try:
            size = [size_hint(s) for s in n.get_size()]
            stride = [size_hint(s) for s in n.get_stride()]
        except Exception:
            size, stride = [], []
        shaped.append((n, size, stride))
    found = None
    for a_i, (_n, a_size, a_stride) in enumerate(shaped):
        if len(a_size) < 2 or a_size[-2] != M or 0 in a_stride[-2:]:
            continue
        K = a_size[-1]
        for b_i in range(a_i + 1, len(shaped)):
            _n, size, stride = shaped[b_i]
            if len(size) < 2:
                continue
            if size[-2:] == [K, N]:
                found = (a_i, b_i, K, layout_char(stride, K, N))
                break
            if size[-2:] == [N, K]:
                found = (a_i, b_i, K, "t" if layout_char(stride, N, K) == "n" else "n")
                break
        if found:
            break
    if found is None:
        raise ValueError(f"no A (M={M}, K) and B (K, N={N}) among inputs {[s for _, s, _ in shaped]}")
    a_i, b_i, K, b_layout = found
    a_size, a_stride = shaped[a_i][1], shaped[a_i][2]
    has_bias = any(i not in (a_i, b_i) and size and size[-1] == N for i, (_, size, _) in enumerate(shaped))
    dtype = shaped[a_i][0].get_dtype()
    device = shaped[a_i][0].get_device()
    op = BMM if len(out) == 3 else (ADDMM if op_name == ADDMM or has_bias else MM)
    name = gemm_dtype(dtype, device)  # fp32 on CUDA: "tf32" where torch multiplies it in TF32
    problem = Problem(M=M, N=N, K=K, dtype=name, layout=layout_char(a_stride, M, K) + b_layout, op=op, batch=batch)
    fields = {
        "op": op_name or op,
        "out": out,
        "dtype": str(dtype),
        "inputs": [(size, stride, str(n.get_dtype())) for n, size, stride in shaped],
    }
    if name == "tf32":  # the same tensors as an IEEE fp32 GEMM: the key must tell them apart
        fields["math"] = "tf32"
    dynamic = _dynamic_dims(out_size, shaped[a_i][0])
    if dynamic:  # sizes above are the compile's hints: never the key of a static GEMM of that size
        fields["dynamic"] = dynamic
    return problem, fields, device


def _dynamic_dims(out_size, a_node) -> list[str]:
    """The GEMM dimensions ("batch", "M", "N", "K") whose sizes are symbolic."""
    names = (["batch"] if len(out_size) == 3 else []) + ["M", "N"]
    dims = [name for name, s in zip(names, out_size) if is_symbolic(s)]
    try:
        if is_symbolic(a_node.get_size()[-1]):
            dims.append("K")
    except Exception:  # noqa: BLE001 -- sizes were read above; only the K mark is at stake
        pass
    return dims


def ktc_signature(kernel_inputs, op_name: str):
    """gemm_signature of a `_finalize_template_configs` call."""
    return gemm_signature(kernel_inputs.nodes(), kernel_inputs.output_layout().size, op_name)


def choices_signature(choices):
    """gemm_signature of a preprocessing call (no op name there: inferred from shapes). Choices
    may see different inputs (CPP GEMMs get a re-blocked weight): the first that parses wins."""
    err = None
    for choice in choices:
        try:
            return gemm_signature(choice.input_nodes, choice.layout.size, None)
        except (ValueError, StopIteration, AttributeError) as exc:
            err = exc
    raise ValueError(f"cannot read a GEMM signature from {len(choices)} choices: {err}")


def scaled_scaling(a_size, b_size, scale_a_size, scale_b_size) -> str:
    """The scaling kind of `_scaled_mm`'s scales, as Inductor's `get_scaling_options` reads it:
    "tensorwise" (every dim 1, or a 0-d scale), "rowwise" (scale_a (M, 1), scale_b (1, N));
    anything else (blockwise, MX) is refused by name: kselect does not model it."""
    if all(s == 1 for s in scale_a_size) and all(s == 1 for s in scale_b_size):
        return "tensorwise"
    m, n = a_size[0], b_size[1]
    if list(scale_a_size) == [m, 1] and list(scale_b_size) == [1, n]:
        return "rowwise"
    raise ValueError(f"scales {list(scale_a_size)} x {list(scale_b_size)} are neither tensorwise nor rowwise")


def scaled_mm_signature(kernel_inputs, fast_accum: bool = False):
    """tuned_scaled_mm's MMKernelInputs (mat_a, mat_b, scale_a, scale_b[, bias]) -> (Problem,
    cache-key fields, device). C's dtype is the lowering's `out_dtype`; `fast_accum` is its
    use_fast_accum (the ATen choice's kwarg override at get_template_configs). A bias (no TMA
    template in Inductor's lowering) is refused."""
    declared = getattr(kernel_inputs, "out_dtype", None)  # a method on 2.13; else the output's
    out_dtype = (declared() if callable(declared) else None) or kernel_inputs.output_layout().dtype
    return scaled_signature(kernel_inputs.nodes(), out_dtype, fast_accum)


def choices_scaled_signature(choices, fast_accum: bool = False):
    """scaled_signature of a preprocessing call of `_scaled_mm` (every choice sees the same four
    inputs; C's dtype is the choices' output layout's)."""
    if not choices:
        raise ValueError("no choices to read a scaled_mm from")
    return scaled_signature(choices[0].input_nodes, choices[0].layout.dtype, fast_accum)


def scaled_signature(nodes, out_dtype, fast_accum: bool = False):
    """`_scaled_mm`'s input nodes (mat_a, mat_b, scale_a, scale_b), C's dtype and use_fast_accum
    -> (Problem, cache-key fields, device); a dynamic size marks its dimension as for a GEMM."""
    from kselect.kernels.problem import Problem

    nodes = list(nodes)
    if len(nodes) != 4:
        raise ValueError(f"scaled_mm with {len(nodes)} inputs: only mat_a, mat_b, scale_a, scale_b are modelled")
    sizes = [[size_hint(s) for s in n.get_size()] for n in nodes]
    strides = [[size_hint(s) for s in n.get_stride()] for n in nodes[:2]]
    (m, k), (_, n) = sizes[0], sizes[1]
    layout = layout_char(strides[0], m, k) + layout_char(strides[1], k, n)
    problem = Problem(
        M=m,
        N=n,
        K=k,
        dtype=nodes[0].get_dtype(),
        layout=layout,
        op=SCALED_MM,
        out_dtype=out_dtype,
        scaling=scaled_scaling(sizes[0], sizes[1], sizes[2], sizes[3]),
        fast_accum=bool(fast_accum),
    )
    fields = {
        "op": SCALED_MM,
        "out": [m, n],
        "dtype": str(nodes[0].get_dtype()),
        "out_dtype": str(out_dtype),
        "fast_accum": bool(fast_accum),
        "inputs": [(size, stride, str(nd.get_dtype())) for nd, size, stride in zip(nodes, sizes, strides + [[], []])],
    }
    dynamic = _dynamic_dims([nodes[0].get_size()[0], nodes[1].get_size()[1]], nodes[0])
    if dynamic:  # sizes above are the compile's hints: never the key of a static GEMM of that size
        fields["dynamic"] = dynamic
    return problem, fields, nodes[0].get_device()


def grouped_signature(nodes, out_size):
    """A `_grouped_mm` lowering's input nodes (A, B[, offs]) and output size -> (GroupedProblem,
    cache-key fields, device). The form comes from the operands' ranks, G from B's or A's leading
    dim (else the offsets' length). The offsets' values are data the compile never sees: the
    problem reads them as Inductor benchmarks them, "uniform" (docs/grouped-mm.md)."""
    from kselect.kernels.grouped.problem import GroupedProblem

    a, b, *rest = nodes
    a_size, b_size = [size_hint(s) for s in a.get_size()], [size_hint(s) for s in b.get_size()]
    a_stride, b_stride = [size_hint(s) for s in a.get_stride()], [size_hint(s) for s in b.get_stride()]
    form = f"{len(a_size)}d{len(b_size)}d"
    M, K = a_size[-2:]
    N = b_size[-1]
    if b_size[-2] != K:
        raise ValueError(f"grouped GEMM A {a_size} and B {b_size} disagree on K")
    if len(a_size) == 3:
        G = a_size[0]
    elif len(b_size) == 3:
        G = b_size[0]
    elif rest:
        G = size_hint(rest[0].get_size()[0])
    else:
        raise ValueError(f"grouped GEMM of 2-D A {a_size} and B {b_size} without offsets")
    layout = layout_char(a_stride, M, K) + layout_char(b_stride, K, N)
    problem = GroupedProblem(G=G, M=M, N=N, K=K, dtype=a.get_dtype(), layout=layout, form=form)
    fields = {
        "op": problem.op,
        "out": [size_hint(s) for s in out_size],
        "dtype": str(a.get_dtype()),
        "inputs": [
            ([size_hint(s) for s in n.get_size()], [size_hint(s) for s in n.get_stride()], str(n.get_dtype()))
            for n in nodes
        ],
    }
    dynamic = [name for name, s in (("M", a.get_size()[-2]), ("K", a.get_size()[-1])) if is_symbolic(s)]
    if dynamic:
        fields["dynamic"] = dynamic
    return problem, fields, a.get_device()


def choices_grouped_signature(choices):
    """grouped_signature of a preprocessing call of `_grouped_mm` (every choice sees A, B, offs)."""
    if not choices:
        raise ValueError("no choices to read a grouped GEMM from")
    return grouped_signature(choices[0].input_nodes, choices[0].layout.size)
