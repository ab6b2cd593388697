"""Static evidence, no GPU: what ptxas makes of the mm template's large tiles, per variant.

For each (shape, mm config) compile for sm_90 on this CPU:
  shipped        -- kernels/triton_kernels.mm_kernel as the collector launches it (plan_source);
  m_specialised  -- the same source with M specialised like N (Triton's 1 / %16 class);
  baked          -- the same source with M, N, K compile-time constants;
  inductor       -- Inductor's triton_mm.py.jinja rendered by hand for the 'nt' layout, sizes and
                    strides constants (what torch.compile generates for that config);
  pointer_loop   -- the shipped kernel with the other K-loop form (`pointer_loop_mm` below): a
                    trip count that may be zero and pointer tensors advanced each step;
and report ptxas's registers / spills (kselect.kernels.triton.cross_compile.ptxas_facts), whether it
serialised the wgmma instructions (its C7515 note), shared memory, and the SASS instruction mix
(global loads and stores by width, LDGSTS = cp.async, HGMMA = wgmma, local-memory traffic).
Usage: python ptx_mm_tiles.py > ptx-mm-tiles.csv
       python ptx_mm_tiles.py --sweep > ptx-mm-sweep.csv   (shipped and pointer_loop over
            SWEEP_SHAPES' DEFAULT mm spaces plus their 4 widest EXHAUSTIVE tiles)
"""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import tempfile

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

sys.path.insert(0, os.path.dirname(__file__))
from specialisation import _rejit  # noqa: E402

from kselect.kernels.triton import kernels as tk  # noqa: E402
from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.kernels.triton.backend import launch_plan  # noqa: E402
from kselect.kernels.triton.cross_compile import plan_source, ptxas_facts  # noqa: E402

CASES = [("333x7168x5120", "BK64-BM128-BN256-G8-S4-W8"), ("1024x9216x3072", "BK64-BM128-BN256-G8-S4-W8"),
         ("4096x3584x4096", "BK64-BM128-BN256-G8-S4-W8"), ("2048x4096x14336", "BK64-BM128-BN256-G8-S4-W8"),
         ("8x9216x3072", "BK128-BM16-BN256-G8-S3-W2"), ("16x4096x131072", "BK128-BM16-BN256-G8-S3-W2"),
         ("333x7168x5120", "BK32-BM64-BN128-G8-S4-W8")]
VARIANTS = ("shipped", "m_specialised", "baked", "inductor", "pointer_loop")
SWEEP_SHAPES = [("333x7168x5120", "nt"), ("333x7168x5120", "nn"), ("333x7168x5120", "tn"),
                ("8x9216x3072", "nt"), ("333x7168x5003", "nt")]
_SHORT = {"BM": "BLOCK_M", "BN": "BLOCK_N", "BK": "BLOCK_K", "G": "GROUP_M", "S": "num_stages", "W": "num_warps"}


@triton.jit
def inductor_mm_nt(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, ALLOW_TF32: tl.constexpr,
                   ACC_TYPE: tl.constexpr):
    # triton_mm.py.jinja for A (M, K) row-major, B (K, N) column-major, C (M, N) row-major.
    stride_am: tl.constexpr = K
    stride_ak: tl.constexpr = 1
    stride_bk: tl.constexpr = 1
    stride_bn: tl.constexpr = K
    pid = tl.program_id(0)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if M >= BLOCK_M:
        offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_a_m = rm % M
    if N >= BLOCK_N:
        offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_b_n = rn % N
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):
        a_k = offs_k[None, :] + (k_idx * BLOCK_K)
        b_k = offs_k[:, None] + (k_idx * BLOCK_K)
        if EVEN_K:
            a = tl.load(A + (a_k * stride_ak + offs_a_m[:, None] * stride_am))
            b = tl.load(B + (b_k * stride_bk + offs_b_n[None, :] * stride_bn))
        else:
            a = tl.load(A + (a_k * stride_ak + offs_a_m[:, None] * stride_am),
                        mask=offs_k[None, :] < (K - k_idx * BLOCK_K), other=0.0)
            b = tl.load(B + (b_k * stride_bk + offs_b_n[None, :] * stride_bn),
                        mask=offs_k[:, None] < (K - k_idx * BLOCK_K), other=0.0)
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)
    tl.store(C + (idx_n + N * idx_m), acc.to(C.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["M"])
def pointer_loop_mm(A, B, C, M, N, K,
                    stride_ab, stride_am, stride_ak,
                    stride_bb, stride_bk, stride_bn,
                    stride_cb, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, HINT_M: tl.constexpr,
                    HINT_N: tl.constexpr, ALLOW_TF32: tl.constexpr, ACC_TYPE: tl.constexpr):
    # The shipped mm kernel's arguments and tiling; K loop: cdiv(K, BLOCK_K) steps (zero
    # when K is 0, as far as the compiler knows) over pointer tensors advanced each step.
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_rows = rows % M
    if HINT_M:
        a_rows = tl.max_contiguous(tl.multiple_of(a_rows, BLOCK_M), BLOCK_M)
    b_cols = cols % N
    if HINT_N:
        b_cols = tl.max_contiguous(tl.multiple_of(b_cols, BLOCK_N), BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = A + batch * stride_ab + a_rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = B + batch * stride_bb + ks[:, None] * stride_bk + b_cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            remaining = K - k0 * BLOCK_K
            a = tl.load(a_ptrs, mask=ks[None, :] < remaining, other=0.0)
            b = tl.load(b_ptrs, mask=ks[:, None] < remaining, other=0.0)
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = C + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=mask)


def candidate(key: str) -> Candidate:
    params = {}
    for part in key.split("-"):
        m = re.match(r"([A-Z]+)(\d+)$", part)
        params[_SHORT[m.group(1)]] = int(m.group(2))
    return Candidate.make("triton", "mm", **params)


def variant_source(plan, problem, kind):
    src = plan_source(plan)
    if kind == "shipped":
        return src
    sig, const, attrs = dict(src.signature), dict(src.constants), dict(src.attrs)
    idx = {n: i for i, n in enumerate(tk.mm_kernel.arg_names)}
    if kind == "m_specialised":
        fn = tk.mm_kernel if "M" not in tk.mm_kernel.do_not_specialize else _rejit(tk.mm_kernel)
        if problem.M == 1:
            sig["M"], const["M"] = "constexpr", 1
        elif problem.M % 16 == 0:
            attrs[(idx["M"],)] = [["tt.divisibility", 16]]
    elif kind == "pointer_loop":
        fn = pointer_loop_mm
    elif kind == "baked":
        fn = _rejit(tk.mm_kernel, baked=("M", "N", "K"))
        for name, value in (("M", problem.M), ("N", problem.N), ("K", problem.K)):
            sig[name], const[name] = "constexpr", value
            attrs.pop((idx[name],), None)
    else:
        fn = inductor_mm_nt
        c = dict(plan.constexprs)
        sig = {"A": sig["A"], "B": sig["B"], "C": sig["C"]}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
        const = {"M": problem.M, "N": problem.N, "K": problem.K, "BLOCK_M": c["BLOCK_M"],
                 "BLOCK_N": c["BLOCK_N"], "BLOCK_K": c["BLOCK_K"], "GROUP_M": c["GROUP_M"],
                 "EVEN_K": c["EVEN_K"], "ALLOW_TF32": c["ALLOW_TF32"], "ACC_TYPE": tl.float32}
        sig.update({name: "constexpr" for name in const})
    return triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs)


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


def static_facts(source, plan) -> dict:
    """ptxas's registers / spills / wgmma serialisation, shared memory and the SASS mix."""
    with tempfile.TemporaryDirectory() as d:
        os.environ["TRITON_CACHE_DIR"] = d
        k = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": plan.num_warps, "num_stages": plan.num_stages})
    ptxas = ptxas_facts(k.asm["ptx"])
    sass = _sass(k.asm["cubin"])
    return {"regs": ptxas["registers"], "spill_store_B": ptxas["spill_store_bytes"],
            "spill_load_B": ptxas["spill_load_bytes"], "wgmma_serialised": int(ptxas["wgmma_serialised"]),
            "shared_B": int(k.metadata.shared),
            "LDG_128": _count(r"\bLDG\.E\.128", sass), "LDG_64": _count(r"\bLDG\.E\.64", sass),
            "LDG_other": _count(r"\bLDG\.E(?!\.(?:128|64))", sass),
            "LDGSTS_128": _count(r"\bLDGSTS\.E(?:\.\w+)*\.128", sass),
            "LDGSTS_other": _count(r"\bLDGSTS\.E(?!(?:\.\w+)*\.128)", sass),
            "HGMMA": _count(r"\bHGMMA\.", sass), "STG_128": _count(r"\bSTG\.E\.128", sass),
            "STG_other": _count(r"\bSTG\.E(?!\.128)", sass), "LDL_STL": _count(r"\b(?:LDL|STL)\b", sass),
            "sass_lines": sass.count("\n")}


def _sass(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        tool = os.path.join(os.path.dirname(triton.knobs.nvidia.ptxas.path), "cuobjdump")
        return subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout


def sweep_cases():
    """(problem, candidate, variants) over each sweep shape's mm space: DEFAULT + 4 widest tiles."""
    from kselect.kernels.triton.space import triton_space

    for shape, layout in SWEEP_SHAPES:
        problem = Problem(*(int(x) for x in shape.split("x")), "bf16", layout, "mm")
        cands = [c for c in triton_space(problem, "default") if c.template == "mm"]
        wide = sorted((c for c in triton_space(problem, "exhaustive") if c.template == "mm" and c not in cands),
                      key=lambda c: (-c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"], c.key))
        for cand in cands + wide[:4]:
            yield problem, cand, ("shipped", "pointer_loop")


def main() -> int:
    out = csv.writer(sys.stdout)
    header = None
    if "--sweep" in sys.argv[1:]:
        cases = list(sweep_cases())
    else:
        cases = [(Problem(*(int(x) for x in shape.split("x")), "bf16", "nt", "mm"), candidate(key), VARIANTS)
                 for shape, key in CASES]
    for problem, cand, variants in cases:
        shape, key = problem.key, cand.key.split(":")[-1]
        plan = launch_plan(cand, problem, 132)
        for kind in variants:
            facts = static_facts(variant_source(plan, problem, kind), plan)
            if header is None:
                header = ["problem", "config", "variant", *facts]
                out.writerow(header)
            out.writerow([shape, key, kind, *facts.values()])
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
