"""8-layer decode: stock EXHAUSTIVE's own best time per GEMM (its autotune table, from the run
that the budget stopped) against the cuBLAS kernels verify ran for those GEMMs (verify's
profiled steps: GPU time per call).

Run from the repo root: python reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/dev-cpu/decode_exhaustive_vs_verify.py

The GEMM of each cuBLAS kernel is told by its call count (8 = once per layer) and its time: at
M = 8 each GEMM streams its weight once, so time follows weight bytes (N x K x 2).
Inductor times Triton templates within ~6 % of how they run in the compiled program on the H200
(reports/2026-12-02-faithfulness-h200); it mis-times cuBLAS 1.22-1.57x slow, which is why its table is
not used for ATen here.
"""
import json
import re
from pathlib import Path

RUN = Path("reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call3/m/decode8x")
log = (RUN / "logs" / "decode-exhaustive.log").read_text()
best = {}
for m in re.finditer(r"AUTOTUNE mm\(8x(\d+), (\d+)x(\d+)\)\n.*\n.*\n\s+(\S+) ([0-9.]+) ms", log):
    k, n = int(m.group(1)), int(m.group(3))
    best[(n, k)] = (m.group(4), float(m.group(5)))
verify = next(r for r in json.loads((RUN / "results.json").read_text())["runs"] if r["variant"] == "kselect-verify")
kernels = verify["kernel_time"]["kernels"]["gemm"]
reduce_ms = sum(t for name, t, calls in kernels if "splitKreduce" in name) / 16   # per split-K GEMM call
cublas = sorted(((t / calls, name) for name, t, calls in kernels if name.startswith("nvjet") and calls == 8),
                reverse=True)
print(f"split-K reduce: {reduce_ms:.4f} ms per call (added to the split-K GEMMs)")
print(f"{'GEMM (N x K, M = 8)':<22} {'weight MB':>9} {'EXHAUSTIVE best (its table)':>34} {'verify cuBLAS ms/call':>22} {'ratio':>6}")
for (per_call, name), (n, k) in zip(cublas, sorted(best, key=lambda nk: nk[0] * nk[1], reverse=True)):
    ms = per_call + (reduce_ms if "splitK" in name else 0.0)
    tile, t = best[(n, k)]
    print(f"{n:>6} x {k:<13} {n * k * 2 / 1e6:9.1f} {tile:>22} {t:9.4f} ms {ms:15.4f} ms {t / ms:8.2f}x  ({name})")
print("EXHAUSTIVE's fifth GEMM, lm_head 8x128256x4096, did not finish within the budget.")
