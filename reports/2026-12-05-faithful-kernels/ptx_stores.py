"""Static evidence, no GPU: the sm_90 PTX of our kernels' epilogue stores per variant.

For each (template, config) of a shape's DEFAULT space (plus its largest EXHAUSTIVE tiles),
compile three variants for sm_90 on this CPU -- N runtime (the kernels before the change), N
specialised (shipped), all sizes baked in (as Inductor does) -- and count the global stores by
width in the PTX. Usage: python ptx_stores.py [MxNxK] > ptx-stores.csv
"""
from __future__ import annotations

import csv
import os
import re
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget

sys.path.insert(0, os.path.dirname(__file__))
from specialisation import _rejit  # noqa: E402

from kselect.kernels.triton import kernels as tk  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.kernels.triton.backend import launch_plan  # noqa: E402
from kselect.kernels.triton.cross_compile import plan_source  # noqa: E402
from kselect.training.measure.faithfulness import pick_candidates  # noqa: E402


def stores(source, plan) -> dict:
    with tempfile.TemporaryDirectory() as d:
        os.environ["TRITON_CACHE_DIR"] = d
        k = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": plan.num_warps, "num_stages": plan.num_stages})
    ptx = k.asm["ptx"]
    return {"st_v4": len(re.findall(r"st\.global(?:\.\w+)*\.v4", ptx)),
            "st_v2": len(re.findall(r"st\.global(?:\.\w+)*\.v2", ptx)),
            "st_b16": len(re.findall(r"st\.global(?:\.\w+)*\.b16 ", ptx)), "ptx_lines": ptx.count("\n")}


def variant_source(plan, problem, kind):
    """plan_source's ASTSource, with the kernel swapped for a variant and its sizes set."""
    src = plan_source(plan)
    kernel = tk.mm_kernel if plan.template == "mm" else tk.persistent_tma_kernel
    if kind == "shipped":
        return src
    sig, const = dict(src.signature), dict(src.constants if hasattr(src, "constants") else src.constexprs)
    attrs = dict(src.attrs)
    idx = {n: i for i, n in enumerate(kernel.arg_names)}
    if kind == "unspecialised_n":
        fn = _rejit(kernel, do_not_specialize=("M", "N"))
        sig["N"] = "i32"
        const.pop("N", None)
        attrs.pop((idx["N"],), None)
    else:
        fn = _rejit(kernel, baked=("M", "N", "K"))
        for name, value in (("M", problem.M), ("N", problem.N), ("K", problem.K)):
            sig[name] = "constexpr"
            const[name] = value
            attrs.pop((idx[name],), None)
    return triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs)


def main() -> int:
    m, n, k = (int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "333x7168x5120").split("x"))
    problem = Problem(m, n, k, "bf16", "nt", "mm")
    out = csv.writer(sys.stdout)
    out.writerow(["problem", "candidate", "variant", "st_v4", "st_v2", "st_b16", "ptx_lines"])
    for cand in pick_candidates(problem, per_template=2, large_per_template=1):
        if cand.backend != "triton" or cand.template == "decompose_k":
            continue
        plan = launch_plan(cand, problem, 132)
        for kind in ("unspecialised_n", "shipped", "baked"):
            r = stores(variant_source(plan, problem, kind), plan)
            out.writerow([problem.key, cand.key, kind, r["st_v4"], r["st_v2"], r["st_b16"], r["ptx_lines"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
