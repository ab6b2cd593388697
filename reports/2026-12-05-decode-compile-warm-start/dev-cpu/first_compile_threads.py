#!/usr/bin/env python3
"""Does a process's first Triton compile cost verify's threaded template compiles anything that
an earlier, in-process warm-up compile would take away?

Verify compiles its kept lm_head tiles (8 x 128256 x 4096, bf16) in 4 threads of the compiling
process, and on the H200 those are the process's first Triton compiles. This measures, in fresh
processes that have imported torch, Inductor's Triton runtime and Triton (as the compiling
process has) and compiled nothing:
  cold  the four lm_head tiles at once in 4 threads, nothing compiled before;
  keyed the same after what Inductor's template generation has already asked of Triton in the
        compiling process on the GPU (torch.utils._triton.triton_hash_with_backend: Triton's
        source key and the backend's hash), timed apart;
  warm  the same after one small warm-up compile (the 64x16x32 tile of the reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait script),
        timed apart.
The compiles and their specialisation are those of reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait/dev-cpu/
triton_compile_gil.py (this project's mm_kernel, target cuda:90, no GPU needed); every set
starts from an empty Triton cache. Modes alternate, each (mode, repeat) in its own process.

Usage: python first_compile_threads.py [--reps 5] [--out FILE.json]
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("cold", "keyed", "warm")
GIL = os.path.join(HERE, "..", "..", "2026-12-04-prefill-target-warm-up-lm-head-compile-wait", "dev-cpu", "triton_compile_gil.py")


def _load_gil():
    spec = importlib.util.spec_from_file_location("triton_compile_gil", GIL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one(mode: str) -> dict:
    # the compiling process has torch and Inductor's Triton side loaded
    importlib.import_module("torch._inductor.runtime.triton_heuristics")

    g = _load_gil()
    g.import_triton()
    warm_ms = None
    if mode == "warm":
        warm_ms = g.warmup_in_this_process()["wall_ms"]
    if mode == "keyed":
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        from triton.runtime.cache import triton_key

        t = time.perf_counter()
        triton_key()
        make_backend(GPUTarget("cuda", 90, 32)).hash()
        warm_ms = (time.perf_counter() - t) * 1e3
    os.environ["TRITON_CACHE_DIR"] = g.new_cache_dir(mode)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as ex:
        recs = [f.result() for f in [ex.submit(g.compile_one, n, c, t0) for n, c in g.CONFIGS.items()]]
    span = (time.perf_counter() - t0) * 1e3
    assert all(r["cache_miss"] for r in recs)
    return {"mode": mode, "warmup_ms": warm_ms, "span_ms": round(span, 1),
            "walls_ms": {r["config"]: round(r["wall_ms"], 1) for r in recs},
            "thread_cpu_ms": round(sum(r["thread_cpu_ms"] for r in recs), 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one)))
        return 0
    runs = []
    for rep in range(a.reps):
        for mode in (MODES if rep % 2 == 0 else MODES[::-1]):
            out = subprocess.run([sys.executable, __file__, "--one", mode], check=True,
                                 capture_output=True, text=True).stdout
            runs.append({**json.loads(out.strip().splitlines()[-1]), "repeat": rep})
            print(json.dumps(runs[-1]), flush=True)
    med = {m: statistics.median(r["span_ms"] for r in runs if r["mode"] == m) for m in MODES}
    before = {m: statistics.median(r["warmup_ms"] for r in runs if r["mode"] == m) for m in MODES[1:]}
    summary = {"span_ms_median": med, "before_the_set_ms_median": before,
               "keyed_minus_warm_ms": round(med["keyed"] - med["warm"], 1), "reps": a.reps}
    print(json.dumps(summary))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"command": " ".join(sys.argv), "runs": runs, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
