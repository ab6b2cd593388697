"""Why verify reads ATen slow: one GEMM's ATen time read every way verify and the collector do.

For each shape (the 14 fixed in reports/device/history.md, "ATen as verify reads it"), in one
process on one GPU:
- `compiled`: plain torch.compile's kernel time, timed as `kselect bench gemm` times it
  (CUDA-graph replay over the collector's rotating operands), and the same compiled function
  over Inductor-style operands (unscaled randn, the set cloned: `compiled_inductor_ops`);
- `collector`: the ATen backend's runner over the collector's operands (kselect.kernels);
- `inductor_ops`: the same call over Inductor-style operands (what verify's ATen gets);
- `verify`: a kselect-verify compile of the same GEMM; its own reading of every kept choice
  (`primary`), then after its decision, on the same runners and stream: read again in the same
  order, again in reverse order, after 300 ms idle, and (ATen) on the collector's operands;
  the kernels each runner launches (torch.profiler); and the verify compile's kernel time.
GPU clocks, power and temperature are sampled by nvidia-smi beside it (smi.csv).

Usage: python diagnose.py OUT_DIR [--model MODEL.json] [--deadline-s 400]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SHAPES = [
    (512, 3584, 3584), (2048, 3584, 3584), (8192, 3584, 3584),
    (512, 3072, 8192), (2048, 3072, 8192), (8192, 3072, 8192),
    (512, 16384, 3072), (2048, 16384, 3072), (8192, 16384, 3072),
    (512, 37888, 3584), (2048, 37888, 3584), (8192, 37888, 3584),
    (128, 4608, 3584), (2, 9216, 3072),
]  # fmt: skip


def kernel_names(run, stream=None) -> list[str]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    ctx = torch.cuda.stream(stream) if stream is not None else torch.cuda.stream(torch.cuda.current_stream())
    with ctx:
        run()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def inductor_style_sets(problem, n: int):
    """Unscaled randn operands, one set cloned n times (verify's Operands.clone)."""
    import torch

    from kselect.kernels.operands import make_operands

    base = make_operands(problem, "cuda", seed=7)
    for t in (base.a, base.b):
        t.copy_(torch.randn(t.shape, device="cuda", dtype=torch.float32).to(t.dtype))
    sets = [base]
    for _ in range(n - 1):
        sets.append(type(base)(base.a.clone(), base.b.clone(), torch.empty_like(base.out), None))
    return sets


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model", default=None, help="default: the shipped model for this card")
    ap.add_argument("--deadline-s", type=float, default=400)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.deadline_s
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active",
         "--format=csv", "-lms", "100"],
        stdout=open(out / "smi.csv", "w"), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import torch

    from kselect.kernels.aten.backend import AtenBackend
    from kselect.kernels.operands import rotating_operands
    from kselect.kernels.problem import Problem
    from kselect.kernels.timing import time_runners, warm_gpu
    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.compat.compile_pool import warm_compile_pool
    from kselect.selector.verify import timing as vt
    from kselect.training.bench import gemm_worker as bench
    from kselect.training.bench.common import describe_choice

    warm_gpu()
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device="cuda"))
    torch._dynamo.reset()
    warm_compile_pool()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    card = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    (out / "card.json").write_text(json.dumps(card) + "\n")

    verify_reads: list = []
    orig_judge = vt._judge_and_time

    def judged(choices, dtype, device_type, results, runners, dropped, stream, target_ms, replays, warmed=False):
        got = orig_judge(choices, dtype, device_type, results, runners, dropped, stream, target_ms, replays, warmed)
        rec = {"target_ms": target_ms, "replays": replays, "choices": {}}
        names = {i: describe_choice(choices[i]) for i in runners}
        for i in runners:
            rec["choices"][names[i]] = {"primary": got.ms[i], "spread": got.stats.get(i, {}).get("spread")}

        def read(i):
            return time_runners(runners[i], target_ms=target_ms, replays=replays, stream=stream).median_ms

        for i in runners:
            rec["choices"][names[i]]["again"] = read(i)
        for i in reversed(list(runners)):
            rec["choices"][names[i]]["reversed"] = read(i)
        for i in runners:
            time.sleep(0.3)
            rec["choices"][names[i]]["after_idle"] = read(i)
        for i in runners:
            rec["choices"][names[i]]["kernels"] = kernel_names(runners[i][0], stream)
        verify_reads.append(rec)
        return got

    vt._judge_and_time = judged
    selector = None
    rows = []
    for n, (M, N, K) in enumerate(SHAPES):
        if time.time() > deadline:
            rows.append({"problem": f"{M}x{N}x{K}", "skipped": "deadline"})
            continue
        problem = Problem(M, N, K, "bf16", "nt", "mm")
        row = {"problem": problem.key}
        try:
            # plain and verify compiles alternate which goes first, against order effects
            for variant in ("plain", "verify") if n % 2 == 0 else ("verify", "plain"):
                if variant == "plain":
                    r = bench.measure_shape(problem, "plain", None, "cuda")
                    row["compiled"] = r["kernel_ms"]
                else:
                    from torch._inductor import config as ic

                    ic.max_autotune_gemm_search_space = "DEFAULT"
                    selector = selector or ksi.enable("verify", model=args.model)
                    k0 = len(verify_reads)
                    r = bench.measure_shape(problem, "kselect-verify", selector, "cuda")
                    row["verify_kernel_ms"] = r["kernel_ms"]
                    row["verify_chosen"] = r.get("chosen")
                    row["verify_measured_ms"] = r.get("kselect_measured_ms")
                    row["verify_reads"] = verify_reads[k0:]
            # the compiled plain function again, now over Inductor-style operands
            torch._dynamo.reset()
            compiled = torch.compile(lambda a, b: a @ b, dynamic=False)
            sets = rotating_operands(problem, l2, "cuda")
            isets = inductor_style_sets(problem, len(sets))
            row["compiled_again"] = time_runners(
                [lambda o=o: compiled(o.a, o.b) for o in sets], target_ms=0.5, replays=9
            ).median_ms
            row["compiled_inductor_ops"] = time_runners(
                [lambda o=o: compiled(o.a, o.b) for o in isets], target_ms=0.5, replays=9
            ).median_ms
            row["compiled_kernels"] = kernel_names(lambda: compiled(sets[0].a, sets[0].b))
            be = AtenBackend()
            run = lambda ops: be.runner("mm", ops)  # noqa: E731
            row["collector"] = time_runners([run(o) for o in sets], target_ms=0.5, replays=7).median_ms
            row["inductor_ops"] = time_runners([run(o) for o in isets], target_ms=0.5, replays=7).median_ms
            row["collector_kernels"] = kernel_names(run(sets[0]))
            row["inductor_ops_kernels"] = kernel_names(run(isets[0]))
            sets = isets = compiled = None  # free the operands before the next shape
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001 -- a failing shape is a result
            row["error"] = f"{type(exc).__name__}: {exc}"[:400]
        rows.append(row)
        with open(out / "rows.jsonl", "a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        aten = next(
            (v for rd in row.get("verify_reads", []) for k, v in rd["choices"].items() if k.startswith("aten")), {}
        )
        print(
            f"{problem.key}: compiled {row.get('compiled')} collector {row.get('collector')} inductor_ops "
            f"{row.get('inductor_ops')} verify-aten {aten.get('primary')} again {aten.get('again')} "
            f"chosen {row.get('verify_chosen')} err {row.get('error')}",
            flush=True,
        )
    smi.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
