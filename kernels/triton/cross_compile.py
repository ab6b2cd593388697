"""Compile our Triton GEMM kernels for a GPU this machine does not have, to time the compile.

Verify compiles every Triton template it keeps before timing it, and a set of kept templates
compiles in parallel, so the slowest compile of the set is what a GEMM's measurement waits
for (reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s3). How long a tile takes to compile depends on its config, not
on the GPU being present: Triton lowers to PTX and runs ptxas on the host. So compile cost is
measured on any machine, here, against a named target (default sm_90, the H200).

`plan_source` states the arguments as a launch would specialise them (pointers and integers
divisible by 16 marked so, integers equal to 1 made constants, M left alone as the
kernels ask), so the compile is the one a real launch of that LaunchPlan triggers.
`ptxas_facts` reads what ptxas made of a compiled kernel (registers, spills, whether it kept
the wgmma pipeline asynchronous): static facts about speed, checkable without the GPU.
`python -m kselect.kernels.triton.cross_compile` is the compile child (kernels/compile_worker.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import subprocess
import tempfile
import time

from kselect.kernels.triton.backend import STRIDE_ARGS
from kselect.kernels.triton.launch_plan import LaunchPlan
from kselect.kernels.triton.scaled import SCALED_STRIDE_ARGS, scaled_kernel

_ARCH = re.compile(r"^sm_(\d+)$")
_POINTER = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32", "tf32": "*fp32", "fp8e4m3": "*fp8e4nv"}
WARM_UP_PLAN = LaunchPlan(
    "mm",
    (
        ("ALLOW_TF32", False),
        ("BLOCK_K", 16),
        ("BLOCK_M", 16),
        ("BLOCK_N", 16),
        ("EVEN_K", True),
        ("GROUP_M", 1),
        ("HINT_M", False),
        ("HINT_N", False),
    ),
    1,
    1,
    "bf16",
    (16, 1, 1, 16, 1, 16, 16, 16, 1, 16, 16),
)


def check_arch(arch: str) -> int:
    """sm_XY -> XY (Triton's CUDA capability); anything else is refused by name."""
    m = _ARCH.match(arch)
    if not m:
        raise ValueError(f"unknown CUDA target {arch!r}: expected sm_<capability>, e.g. sm_90")
    return int(m.group(1))


def plan_source(plan: LaunchPlan):
    """The Triton ASTSource a launch of `plan` compiles (see the module docstring)."""
    import triton
    import triton.language as tl

    from kselect.kernels.triton import kernels as triton_kernels

    if plan.template not in STRIDE_ARGS:
        raise ValueError(f"template {plan.template!r} compiles no Triton kernel of ours")
    if plan.template in SCALED_STRIDE_ARGS:
        fn = scaled_kernel(plan.template)
    else:
        fn = triton_kernels.mm_kernel if plan.template == "mm" else triton_kernels.persistent_tma_kernel
    pointers = {"A": plan.dtype, "B": plan.dtype, "C": plan.out_dtype or plan.dtype, "SA": "fp32", "SB": "fp32"}
    *stride_classes, n_class, k_class = plan.stride_spec
    ints = dict(zip(STRIDE_ARGS[plan.template], stride_classes), N=n_class, K=k_class)
    signature, constexprs, attrs = {}, {}, {}
    for index, name in enumerate(fn.arg_names):
        if name in pointers:
            signature[name] = _POINTER[pointers[name]]
            attrs[(index,)] = [["tt.divisibility", 16]]  # torch allocations are 16-byte aligned
        elif name == "M":
            signature[name] = "i32"  # do_not_specialize
        elif name in ints:
            cls = ints[name]
            if cls == 1:
                signature[name], constexprs[name] = "constexpr", 1
            else:
                signature[name] = "i32"
                if cls == 16:
                    attrs[(index,)] = [["tt.divisibility", 16]]
    values = dict(plan.constexprs, ACC_TYPE=tl.float32)
    for name in fn.arg_names:
        if name not in signature:
            if name not in values:
                raise ValueError(f"plan for {plan.template} lacks the constexpr {name}")
            signature[name], constexprs[name] = "constexpr", values[name]
    return triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)


@contextlib.contextmanager
def _fresh_triton_cache():
    """Triton's cache pointed at an empty folder for the block, so every compile is a miss."""
    with tempfile.TemporaryDirectory(prefix="kselect-triton-cross-") as cache:
        before = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = before


def _compile(source, plan: LaunchPlan, arch: str):
    import triton
    from triton.backends.compiler import GPUTarget

    return triton.compile(
        source,
        target=GPUTarget("cuda", check_arch(arch), 32),
        options={"num_warps": plan.num_warps, "num_stages": plan.num_stages},
    )


def cross_compile(plan: LaunchPlan, arch: str = "sm_90") -> dict:
    """Compile `plan` for `arch` into a fresh cache (always a miss) and say what it cost:
    wall ms, this thread's CPU ms, ptxas's CPU ms (the children's), and what came out."""
    check_arch(arch)
    source = plan_source(plan)
    with _fresh_triton_cache():
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        kernel = _compile(source, plan, arch)
        wall1, cpu1 = time.perf_counter(), time.thread_time()
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_s = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    return {
        "wall_ms": (wall1 - wall0) * 1e3,
        "thread_cpu_ms": (cpu1 - cpu0) * 1e3,
        "ptxas_cpu_ms": children_s * 1e3,
        "shared_bytes": int(kernel.metadata.shared),
        "ptx_lines": kernel.asm["ptx"].count("\n"),
        "cubin_bytes": len(kernel.asm["cubin"]),
    }


def compile_ptx(plan: LaunchPlan, arch: str = "sm_90") -> str:
    """The PTX a launch of `plan` runs on `arch` (compiled into a fresh cache)."""
    source = plan_source(plan)
    with _fresh_triton_cache():
        return _compile(source, plan, arch).asm["ptx"]


def ptxas_facts(ptx: str) -> dict:
    """ptxas -v on `ptx` (for the target its .target line names), with Triton's ptxas:
    registers per thread, spill bytes stored and loaded, and whether ptxas serialised the
    kernel's wgmma instructions (its C7515 note: each waits for the one before to finish)."""
    import triton

    target = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    if target is None:
        raise ValueError("PTX without a .target line")
    with tempfile.TemporaryDirectory(prefix="kselect-ptxas-") as d:
        src = os.path.join(d, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        done = subprocess.run(
            [
                triton.knobs.nvidia.ptxas.path,
                "-v",
                f"--gpu-name={target.group(1)}",
                src,
                "-o",
                os.path.join(d, "kernel.cubin"),
            ],
            capture_output=True,
            text=True,
        )
    if done.returncode:
        raise RuntimeError(f"ptxas failed ({done.returncode}): {done.stderr.strip()[:500]}")
    log = done.stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return {
        "registers": int(re.search(r"Used (\d+) registers", log).group(1)),
        "spill_store_bytes": int(spills.group(1)),
        "spill_load_bytes": int(spills.group(2)),
        "wgmma_serialised": "C7515" in log,
    }


def plan_to_dict(plan: LaunchPlan) -> dict:
    return {
        "template": plan.template,
        "constexprs": [list(kv) for kv in plan.constexprs],
        "num_warps": plan.num_warps,
        "num_stages": plan.num_stages,
        "dtype": plan.dtype,
        "stride_spec": list(plan.stride_spec),
        **({"out_dtype": plan.out_dtype} if plan.out_dtype else {}),
    }


def plan_from_dict(d: dict) -> LaunchPlan:
    return LaunchPlan(
        d["template"],
        tuple((k, v) for k, v in d["constexprs"]),
        int(d["num_warps"]),
        int(d["num_stages"]),
        d["dtype"],
        tuple(int(c) for c in d["stride_spec"]),
        out_dtype=d.get("out_dtype", ""),
    )


def compile_request(req: dict) -> dict:
    """The child's handler: {"plan", "arch"} -> cross_compile's record, or {"error"}."""
    try:
        return cross_compile(plan_from_dict(req["plan"]), req["arch"])
    except Exception as exc:  # a Triton/MLIR error: the parent records this plan as failed
        lines = str(exc).strip().splitlines()
        return {"error": f"{type(exc).__name__}: {lines[0] if lines else ''}"[:500]}


def _serve() -> int:
    from kselect.kernels.compile_worker import serve

    cross_compile(WARM_UP_PLAN, os.environ.get("KSELECT_CROSS_ARCH", "sm_90"))  # imports + first-compile set-up
    return serve(compile_request)


if __name__ == "__main__":
    raise SystemExit(_serve())
