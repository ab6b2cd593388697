"""Why a GEMM where verify kept `aten:mm` ran faster than plain torch.compile's `aten:mm`
(32x16384x3072 bf16 on the H100: 0.0385 ms against 0.0445 ms in every process of
reports/2026-12-06-unseen-flagged-h100). One process, the candidate causes apart:

1. plain torch.compile of the GEMM, timed as `kselect bench gemm` times it (CUDA-graph replays
   over L2-cold rotating operands), its generated code kept;
2. kselect verify's max-autotune compile of the same GEMM (verify measures its kept set on a
   stream of its own), timed the same way, its code kept;
3. plain's compiled function timed again, after verify's measurement: a gap that closes here is
   state verify left (clocks, power, the cuBLAS workspace of another stream), not the kernel;
4. plain's again after kselect's `release_gpu_memory` (cuBLAS workspaces cleared);
5. the kernels each compiled function launches, read once each at the end under torch.profiler
   (CUPTI attached last, so no timing above runs under it).
The card's SM clock, temperature and power are read around every timing (NVML). The generated wrappers
(plain.py, verify.py) show whether the two compiled functions call cuBLAS alike (the output's
layout, the call, padding). Run it in separate processes per CUBLAS_WORKSPACE_CONFIG to see the
workspace's share (probe.sh).

    python reports/2026-12-07-fair-baseline-h100/probe.py --shape 32x16384x3072 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def kernels_launched(fn, device: str) -> list[str]:
    """The kernels one call of `fn` launches (torch.profiler; on the CPU, its aten ops)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activity = ProfilerActivity.CUDA if device == "cuda" else ProfilerActivity.CPU
    with profile(activities=[activity]) as prof:
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type.name == device.upper()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="32x16384x3072", help="MxNxK of a bf16 nt mm")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", help="cuda; cpu only checks that the probe runs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch
    from torch._inductor import config as ic
    from torch._inductor.utils import run_and_get_code

    from kselect.kernels.operands import make_operands, rotating_operands
    from kselect.kernels.problem import Problem
    from kselect.kernels.timing import time_runners, warm_gpu
    from kselect.selector.inductor import lifecycle
    from kselect.selector.verify.timing import release_gpu_memory
    from kselect.training.bench.gpu_state import nvml_readings

    m, n, k = (int(x) for x in args.shape.split("x"))
    device = args.device
    problem = Problem(m, n, k, "bf16", "nt")
    ops = make_operands(problem, device, seed=1)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size if device == "cuda" else 32 << 20
    sets = rotating_operands(problem, l2, device, first=ops)
    record: dict = {
        "card": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "problem": problem.key,
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "steps": [],
    }

    def gpu_state() -> dict | None:  # SM clock, temperature, power (NVML), as the e2e bench reads them
        return nvml_readings(torch.device("cuda")) if device == "cuda" else None

    def timed(name: str, fn) -> None:
        before = gpu_state()
        t = time_runners([lambda o=o: fn(o.a, o.b) for o in sets], target_ms=0.5, replays=9, device=device)
        record["steps"].append(
            {"step": name, "median_ms": t.median_ms, "spread": t.spread, "gpu_before": before, "gpu_after": gpu_state()}
        )
        print(f"{name}: {t.median_ms:.5f} ms (spread {t.spread:.3f})", flush=True)

    if device == "cuda":
        warm_gpu()
    with ic.patch({"force_disable_caches": True}):
        plain = torch.compile(lambda a, b: a @ b, dynamic=False)
        _, code = run_and_get_code(plain, ops.a, ops.b)
    (out / "plain.py").write_text("\n\n".join(code))
    timed("plain", plain)

    torch._dynamo.reset()
    lifecycle.enable("verify")
    patches = {"force_disable_caches": True, "max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON"}
    with ic.patch(patches):
        verify = torch.compile(lambda a, b: a @ b, dynamic=False, mode="max-autotune-no-cudagraphs")
        _, code = run_and_get_code(verify, ops.a, ops.b)
    sel = lifecycle.current()
    record["verify_measured"] = [
        {"ms": m["ms"], "winner": m["winner"]} for m in (sel.measurements if sel is not None else [])
    ]
    lifecycle.disable()
    (out / "verify.py").write_text("\n\n".join(code))
    timed("verify", verify)
    timed("plain, after verify's measurement", plain)
    if device == "cuda":
        release_gpu_memory()
    timed("plain, after the cuBLAS workspaces were cleared", plain)
    timed("verify, again", verify)

    record["kernels"] = {
        "plain": kernels_launched(lambda: plain(ops.a, ops.b), device),
        "verify": kernels_launched(lambda: verify(ops.a, ops.b), device),
    }
    (out / "result.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record["kernels"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
