"""Why a GEMM where kselect kept cuBLAS ran slower than plain torch.compile's.

On the unseen set (this report, H100) kselect-predict kept `aten:mm` on every shape and still
ran 0.4-9 % slower than plain on 54 of 70 GEMMs beyond plain's process-to-process noise (none
faster); kselect-verify's ATen picks likewise. Stock max-autotune (DEFAULT), mostly ATen too,
was not. What kselect does that stock does not, before the timing, in the same process: it
reads which cuBLAS kernel ATen launches under torch.profiler (selector/decide/aten_probe.py)
and, in verify, times the kept set itself. A profiler that leaves CUPTI attached slows every
later kernel of the process (pytorch/pytorch#144455: Kineto tears CUPTI down only with
TEARDOWN_CUPTI=1).

Arms, each in its own fresh process, on the same shapes, timed as `kselect bench gemm` times
(`measure_shape`: compile, then CUDA-graph replay over rotating operands):
- `probe`: plain compiled and timed; then kselect's ATen probe for every shape; plain again;
- `probe_teardown`: the same with TEARDOWN_CUPTI=1 in the environment;
- `predict`: per shape plain, kselect-predict, plain (the probe runs inside predict's decision);
- `predict_noprobe`: the same with the probe off (its columns stay missing, as on ROCm).
Last, in each arm, the kernels each compiled function launches, called directly and replayed
from a CUDA graph as the timing harness replays it (profiled after all timing).

The verify arms (third study): `verify_state` times plain on every shape, then compiles and
times kselect-verify on every shape (verify measures its kept sets), then plain again;
`verify_state_idle` the same with 300 ms of idle before each of the second plain timings.

The fix's arms (second call): `probe_graph` (the probe reading a CUDA graph's dump, no profiler)
and `probe_profiler` (the profiler reader asking Kineto for the teardown itself, in-process).
The first call's `probe` arm also timed a DOT-dump probe that failed (the graph was not kept for
the dump); the product's graph reader keeps it (kernels/aten/launched.py).

Usage: python aten_gap.py OUT_DIR [--deadline-s 240] [--arms probe_graph,probe_profiler]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SHAPES = [  # the widest gaps of the unseen run first, then large ones
    (2, 4608, 3584),
    (2, 3072, 3072),
    (8, 3584, 3584),
    (128, 3584, 3584),
    (32, 3072, 8192),
    (512, 4608, 3584),
    (2048, 3072, 3072),
    (8192, 3584, 3584),
]
ARMS = (
    "probe",
    "probe_teardown",
    "predict",
    "predict_noprobe",
    "probe_graph",
    "probe_profiler",
    "verify_state",
    "verify_state_idle",
)
# the verify arms' shapes: where verify kept cuBLAS and still ran slower than plain after the
# probe's fix (reports/2026-12-06-aten-probe-cupti), then three of the widest earlier gaps
VERIFY_SHAPES = [
    (8, 3584, 3584),
    (512, 4608, 3584),
    (512, 3584, 3584),
    (32, 16384, 3072),
    (128, 16384, 3072),
    (2, 4608, 3584),
    (2, 3072, 3072),
    (128, 3584, 3584),
]
FIRST_CALL_ARMS = ARMS[:4]  # what the first call ran (main at c877f85)
# the environment each arm's process starts with; "probe" is the profiler as the first probe ran
# it (Kineto keeps CUPTI attached); "probe_profiler" lets the probe itself ask for the teardown
ARM_ENV = {"probe": {"TEARDOWN_CUPTI": "0"}, "probe_teardown": {"TEARDOWN_CUPTI": "1"}}


def _kernels(fn, args) -> dict[str, list[str]]:
    """The kernels one call launches, called directly and replayed from a CUDA graph captured
    on a fresh side stream as the timing harness captures it (kernels/timing.py)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn(*args)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn(*args)
    torch.cuda.synchronize()
    got = {}
    for how, call in (("direct", lambda: fn(*args)), ("graph", graph.replay)):
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        got[how] = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return got


def run_arm(arm: str, out: Path, deadline: float) -> None:
    import torch

    from kselect.kernels.operands import gemm_fn, make_operands
    from kselect.kernels.problem import Problem
    from kselect.kernels.timing import warm_gpu
    from kselect.training.bench import gemm_worker as gemm

    warm_gpu()
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device="cuda"))
    torch._dynamo.reset()
    selector = None
    if arm.startswith("predict") or arm.startswith("verify"):
        from torch._inductor import config as ic

        from kselect.selector.decide import rankers
        from kselect.selector.inductor import lifecycle as ksi

        if arm == "predict_noprobe":
            rankers.AtenKernelFacts.__call__ = lambda self, problem: None  # the columns stay missing
        ic.max_autotune_gemm_search_space = "DEFAULT"
        selector = ksi.enable("verify" if arm.startswith("verify") else "predict")
    problems = [Problem(M, N, K, "bf16", "nt") for M, N, K in (VERIFY_SHAPES if arm.startswith("verify") else SHAPES)]
    rows = []
    with open(out, "a") as fh:

        def keep(row: dict, step: str) -> None:
            row.update(arm=arm, step=step)
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            fh.flush()

        if arm.startswith("probe"):
            from kselect.kernels.aten.launched import probe

            for p in problems:
                keep(gemm.measure_shape(p, "plain", None, "cuda"), "before")
            reader = "graph" if arm == "probe_graph" else "profiler"
            for p in problems:
                probe(p, reader=reader)
            for p in problems:
                if time.time() < deadline:
                    keep(gemm.measure_shape(p, "plain", None, "cuda"), "after")
        elif arm.startswith("verify"):
            for p in problems:
                keep(gemm.measure_shape(p, "plain", None, "cuda"), "before")
            for p in problems:
                if time.time() < deadline:
                    keep(gemm.measure_shape(p, "kselect-verify", selector, "cuda"), "verify")
            for p in problems:
                if time.time() < deadline:
                    if arm == "verify_state_idle":
                        time.sleep(0.3)
                    keep(gemm.measure_shape(p, "plain", None, "cuda"), "after")
        else:
            for p in problems:
                if time.time() > deadline:
                    break
                keep(gemm.measure_shape(p, "plain", None, "cuda"), "before")
                keep(gemm.measure_shape(p, "kselect-predict", selector, "cuda"), "predict")
                keep(gemm.measure_shape(p, "plain", None, "cuda"), "after")
        # the kernels each kind of compiled function launches, profiled after every timing
        for p in problems[:3] if not arm.startswith("verify") else []:
            ops = make_operands(p, "cuda", seed=1)
            for variant in ("plain",) + (("kselect-predict",) if selector is not None else ()):
                torch._dynamo.reset()
                from torch._inductor import config as ic

                patches = {"force_disable_caches": True}
                kw = {}
                if variant != "plain":
                    patches.update(max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON")
                    kw = {"mode": "max-autotune-no-cudagraphs"}
                with ic.patch(patches):
                    fn = torch.compile(gemm_fn(p.op), dynamic=False, **kw)
                    names = _kernels(fn, ops.gemm_args)
                fh.write(
                    json.dumps({"arm": arm, "step": "kernels", "variant": variant, "problem": p.key, "kernels": names})
                    + "\n"
                )


def summarise(path: Path) -> str:
    rows = [json.loads(line) for line in open(path)]
    lines = [
        "| arm | shape | plain before (us) | predict (or verify) / before | plain after / before |",
        "| --- | --- | --- | --- | --- |",
    ]
    for arm in ARMS:
        by: dict[str, dict[str, float]] = {}
        for r in rows:
            if r.get("arm") == arm and "kernel_ms" in r:
                by.setdefault(r["problem"], {})[r["step"]] = r["kernel_ms"]
        for key, s in by.items():
            b = s.get("before")
            if not b:
                continue
            pr = f"{s['predict'] / b:.3f}" if "predict" in s else (f"{s['verify'] / b:.3f}" if "verify" in s else "")
            af = f"{s['after'] / b:.3f}" if "after" in s else ""
            lines.append(f"| {arm} | {key.split(':')[1]} | {b * 1e3:.2f} | {pr} | {af} |")
    kern = [r for r in rows if r.get("step") == "kernels"]
    lines += ["", "| arm | shape | variant | kernels |", "| --- | --- | --- | --- |"]
    for r in kern:
        for how, names in r["kernels"].items():
            shape = r["problem"].split(":")[1]
            lines.append(f"| {r['arm']} | {shape} | {r['variant']} ({how}) | {', '.join(n[:70] for n in names)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--deadline-s", type=float, default=240)
    ap.add_argument("--arms", default=",".join(FIRST_CALL_ARMS), help="comma-separated arms, in order")
    ap.add_argument("--arm", choices=ARMS, help="(internal) run one arm in this process")
    ap.add_argument("--deadline", type=float, help="(internal) the wall-clock deadline")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = args.out / "rows.jsonl"
    if args.arm:
        run_arm(args.arm, rows, args.deadline)
        return 0
    arms = [a for a in args.arms.split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        ap.error(f"unknown arms {unknown}; known: {', '.join(ARMS)}")
    deadline = time.time() + args.deadline_s
    for i, arm in enumerate(arms):
        if time.time() > deadline:
            break
        env = {k: v for k, v in os.environ.items() if k != "TEARDOWN_CUPTI"}
        env.update(ARM_ENV.get(arm, {}))
        left = deadline - time.time()
        share = left / (len(arms) - i)  # this arm's share of the time left
        cmd = [sys.executable, __file__, str(args.out), "--arm", arm, "--deadline", str(time.time() + share)]
        try:
            subprocess.run(cmd, env=env, timeout=left, check=False)
        except subprocess.TimeoutExpired:
            print(f"{arm}: out of time", file=sys.stderr)
    table = summarise(rows)
    (args.out / "table.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
