"""Which kernels does ATen (cuBLAS / cuBLASLt) launch for each GEMM of our datasets?

For every problem in problems.csv this runs the ATen candidate exactly as the collector does
(kselect.kernels.aten on kselect.kernels.operands, `out=` preallocated), once to warm up and then
three times under torch.profiler, and records the CUDA kernels each call launched (names, count)
and a quick CUDA-event time. No Triton, no benchmark loop: the question is cuBLAS's own choice
(tile, split-K, gemv, reduction kernel), which its heuristics make without timing anything.

    python reports/2026-12-05-cublas-kernels/probe.py --out $OUT/kernels.jsonl
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from kselect.kernels.aten.backend import AtenBackend
from kselect.kernels.operands import make_operands
from kselect.kernels.problem import Problem

HERE = Path(__file__).resolve().parent


def launched_kernels(fn, calls: int = 3) -> list[str]:
    """Names of the CUDA kernels `calls` invocations of fn launch, in launch order."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    events.sort(key=lambda e: e.time_range.start)
    return [e.name for e in events]


def event_time_ms(fn, reps: int = 20) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default=str(HERE / "problems.csv"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    backend = AtenBackend()
    rows = list(csv.DictReader(open(args.problems)))
    t0 = time.time()
    with open(args.out, "w") as fh:
        for row in rows:
            problem = Problem.from_dict({k: row[k] for k in ("M", "N", "K", "op", "dtype", "layout", "batch")})
            record = {"key": problem.key, "source": row["source"], "model": row["model"]}
            try:
                ops = make_operands(problem, "cuda")
                fn = backend.runner(backend.compile(backend.candidates(problem)[0], problem), ops)
                fn()
                torch.cuda.synchronize()
                names = launched_kernels(fn)
                record.update(kernels=names, per_call=len(names) / 3, event_ms=event_time_ms(fn))
                del ops, fn
            except Exception as exc:  # a shape too large for memory is recorded, not fatal
                record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            torch.cuda.empty_cache()
    print(f"{len(rows)} problems in {time.time() - t0:.1f} s on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
