"""Device smoke check (not collected by pytest): every template compiles, is correct and is timed.

Usage on a CUDA machine: python tests/gpu_smoke.py 333x7168x5120xnt 64x4096x4096xnn
"""

import sys
import time

import torch

from kselect.kernels import Problem, get_backend
from kselect.kernels.operands import make_operands, reference, relative_error
from kselect.kernels.timing import time_runners, warm_gpu
from kselect.kernels.triton.space import triton_space


def main(specs):
    warm_gpu()
    tb, ab = get_backend("triton"), get_backend("aten")
    for spec in specs:
        m, n, k, layout = spec.split("x")
        p = Problem(int(m), int(n), int(k), "bf16", layout)
        ops = [make_operands(p, "cuda", s) for s in range(3)]
        ref = reference(p, ops[0])
        cands = [c for c in ab.candidates(p)] + triton_space(p, "default")[:40]
        t0 = time.time()
        tb.precompile([(c, p) for c in cands if c.backend == "triton"])
        print(f"{p.key}: precompile {time.time() - t0:.1f}s for {len(cands)} candidates", flush=True)
        for c in cands:
            be = get_backend(c.backend)
            try:
                plan = be.compile(c, p)
                rs = [be.runner(plan, o) for o in ops]
                ops[0].out.fill_(float("nan"))
                rs[0]()
                torch.cuda.synchronize()
                err = relative_error(ops[0].out, ref)
                t = time_runners(rs)
                print(f"  {c.key:60s} err={err:.2e} {t.median_ms * 1000:8.1f} us spread={t.spread:.3f} reps={t.reps}")
            except Exception as exc:
                print(f"  {c.key:60s} FAILED {type(exc).__name__}: {str(exc)[:200]}")


if __name__ == "__main__":  # the precompile pool spawns processes that re-import this file
    main(sys.argv[1:])
