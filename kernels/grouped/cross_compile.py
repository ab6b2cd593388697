"""Compile Inductor's Triton `grouped_mm` template for a GPU this machine lacks (default sm_90).

Inductor renders the template only with a CUDA device present (its kernel header, sizes and
epilogue come from the device's graph). Here the template's own text, from the installed torch,
is rendered with a minimal set of its hooks: the kernel header (`def_kernel`: the named
pointers and the output), sizes and strides as the static problem's integers, and a plain
masked store for `store_output` (Inductor's store differs only in its index arithmetic). Every
line between -- the persistent loop over groups and tiles, the TMA descriptors and loads, the
dot -- is Inductor's, so the compile cost and ptxas's facts are the template's.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.run import TORCH_DTYPES
from kselect.kernels.triton.cross_compile import _fresh_triton_cache, check_arch

_TRITON_POINTER = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32"}
KERNEL = "grouped_mm_kernel"


def _operand_shapes(p: GroupedProblem) -> dict[str, tuple[list[int], list[int]]]:
    """Each pointer's logical sizes and strides (B as (…, K, N), whatever its storage)."""
    a = [p.M, p.K] if p.form.startswith("2d") else [p.G, p.M, p.K]
    b = [p.K, p.N] if p.form.endswith("2d") else [p.G, p.K, p.N]

    def strides(size, transposed):
        stored = size[:-2] + ([size[-1], size[-2]] if transposed else size[-2:])
        dense = [1] * len(stored)
        for i in range(len(stored) - 2, -1, -1):
            dense[i] = dense[i + 1] * stored[i + 1]
        return dense[:-2] + ([dense[-1], dense[-2]] if transposed else dense[-2:])

    return {
        "a_ptr": (a, strides(a, p.layout[0] == "t")),
        "b_ptr": (b, strides(b, p.layout[1] == "t")),
        "offsets_ptr": ([p.G], [1]),
    }


def render_source(problem: GroupedProblem, candidate: Candidate, num_sms: int = 132) -> str:
    """The Triton source of one grouped_mm config for `problem` (see the module docstring)."""
    import jinja2
    from torch._inductor.kernel.mm_common import load_kernel_template

    shapes = _operand_shapes(problem)
    args: list[str] = []

    def def_kernel(*names):  # the header, then the template's knobs as constants, as Inductor's
        args.extend(names)
        consts = "".join(f"\n    {k}: tl.constexpr = {v}" for k, v in knobs.items())
        return f"@triton.jit\ndef {KERNEL}({', '.join(names)}, out_ptr, OUT_STRIDE_ROW):{consts}"

    def store_output(indices, value, mask, indent_width=4, val_shape=None):
        index = " + ".join(f"({i}) * {s}" for i, s in zip(indices[:-1], ("OUT_STRIDE_ROW",) * len(indices)))
        pad = " " * indent_width
        if len(indices) == 3:  # (g, m, n): a per-group output of M rows
            index = f"({indices[0]}) * {problem.M} * OUT_STRIDE_ROW + ({indices[1]}) * OUT_STRIDE_ROW"
        return (
            f"tl.store(out_ptr + {index} + ({indices[-1]}), {value}.to(out_ptr.dtype.element_ty), mask={mask})".replace(
                "\n", "\n" + pad
            )
        )

    cand = candidate.kwargs
    knobs = {
        "BLOCK_M": cand["BLOCK_M"],
        "BLOCK_N": cand["BLOCK_N"],
        "BLOCK_K": cand["BLOCK_K"],
        "NUM_SMS": num_sms,
        "INDEX_DTYPE": "tl.int32",
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    template = env.from_string(load_kernel_template("triton_mm_grouped"))
    return template.render(
        def_kernel=def_kernel,
        size=lambda name, dim: shapes[name][0][dim],
        stride=lambda name, dim: shapes[name][1][dim],
        store_output=store_output,
        SCALED=False,
        A_IS_2D=problem.form.startswith("2d"),
        B_IS_2D=problem.form.endswith("2d"),
        A_IS_K_MAJOR=problem.layout[0] == "n",
        B_IS_K_MAJOR=problem.layout[1] == "t",
        USE_FAST_ACCUM=False,
        USE_TMA_LOAD=True,
        USE_EXPERIMENTAL_MAKE_TENSOR_DESCRIPTOR=False,
        NUM_CONSUMER_GROUPS=1,
        **knobs,
    )


def cross_compile(problem: GroupedProblem, candidate: Candidate, arch: str = "sm_90", num_sms: int = 132) -> dict:
    """Render and compile one config for `arch` into a fresh Triton cache; what it cost and made."""
    import triton
    from triton.backends.compiler import GPUTarget

    capability = check_arch(arch)
    if problem.dtype not in TORCH_DTYPES:
        raise ValueError(f"no Triton pointer type for {problem.dtype!r}")
    source = render_source(problem, candidate, num_sms)
    with tempfile.TemporaryDirectory(prefix="kselect-grouped-") as d, _fresh_triton_cache():
        path = os.path.join(d, "grouped_kernel.py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location("kselect_grouped_kernel", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, KERNEL)
        pointer = _TRITON_POINTER[problem.dtype]
        signature = {name: ("*i32" if name == "offsets_ptr" else pointer) for name in fn.arg_names[:-2]}
        signature.update(out_ptr=pointer, OUT_STRIDE_ROW="i32")
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs={}, attrs={})
        t0 = time.perf_counter()
        kernel = triton.compile(
            src,
            target=GPUTarget("cuda", capability, 32),
            options={"num_warps": candidate.get("num_warps"), "num_stages": candidate.get("num_stages")},
        )
        wall = time.perf_counter() - t0
    return {
        "wall_ms": wall * 1e3,
        "shared_bytes": int(kernel.metadata.shared),
        "ptx": kernel.asm["ptx"],
        "cubin_bytes": len(kernel.asm["cubin"]),
    }
