"""Which size specialisation makes our runtime-size Triton kernels run as fast as Inductor's?

Per (shape, candidate), four times on one GPU, side by side in one process:
  collector        -- our kernels as shipped (N specialised to Triton's 1 / %16 class, M runtime);
  unspecialised_n  -- the same kernel source with N runtime too (the kernels before the change);
  baked            -- the same kernel source with M, N and K compile-time constants (what
                      Inductor's generated kernels do);
  compiled         -- Inductor's own kernel: torch.compile forced to that one choice
                      (kselect.training.measure.faithfulness.compiled_times).
Usage: python specialisation.py OUT_DIR [--deadline-s 480]
Writes OUT_DIR/specialisation.csv after every shape and OUT_DIR/summary.json at the end.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import types
from pathlib import Path

SHAPES = ["333x7168x5120", "1024x9216x3072", "64x18176x4544", "4096x3584x4096",
          "8x9216x3072", "2048x4096x14336", "16x4096x131072"]


def _rejit(jit_fn, baked=(), do_not_specialize=()):
    """The kernel's Python source compiled again, with `baked` arguments made constexpr."""
    import triton

    fn = jit_fn.fn
    if baked:
        copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        sig = inspect.signature(fn)
        params = [p.replace(annotation="tl.constexpr") if p.name in baked else p
                  for p in sig.parameters.values()]
        copy.__signature__ = sig.replace(parameters=params)
        copy.__module__ = fn.__module__
        copy.__qualname__ = fn.__qualname__
        fn = copy
    return triton.jit(fn, do_not_specialize=list(do_not_specialize))


def variant_backend(kind: str):
    from kselect.kernels.triton import kernels as tk
    from kselect.kernels.triton.backend import TritonBackend

    if kind == "unspecialised_n":
        kernels = {t: _rejit(k, do_not_specialize=("M", "N")) for t, k in
                   (("mm", tk.mm_kernel), ("persistent_tma", tk.persistent_tma_kernel))}
    else:
        kernels = {t: _rejit(k, baked=("M", "N", "K")) for t, k in
                   (("mm", tk.mm_kernel), ("persistent_tma", tk.persistent_tma_kernel))}

    class Variant(TritonBackend):
        def compile(self, candidate, problem):   # compiled at the first launch, for the real sizes
            return self.plan(candidate, problem)

        def kernel(self, template):
            return kernels[template]

    return Variant()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--deadline-s", type=float, default=480)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    import pandas as pd
    import torch

    from kselect.kernels.backend import get_backend
    from kselect.kernels.problem import Problem
    from kselect.kernels.timing import warm_gpu
    from kselect.training.measure import faithfulness as F

    t0 = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems = [Problem(*(int(x) for x in s.split("x")), "bf16", "nt", "mm") for s in args.shapes.split(",")]
    work = [(p, F.pick_candidates(p, per_template=2, large_per_template=1)) for p in problems]
    triton_be = get_backend("triton")
    errors = triton_be.precompile([(c, p) for p, cs in work for c in cs if c.backend == "triton"])
    print(f"precompiled ({len(errors)} errors) at {time.time() - t0:.0f} s", flush=True)
    variants = {k: variant_backend(k) for k in ("unspecialised_n", "baked")}
    warm_gpu()
    rows = []
    for problem, cands in work:
        if time.time() - t0 > args.deadline_s:
            print(f"deadline: stopped before {problem.key}", flush=True)
            break
        r = F.candidate_rows(problem, cands)
        F.collector_times(problem, cands, r)
        for kind, be in variants.items():
            tiles = [c for c in cands if c.backend == "triton" and c.template != "decompose_k"]
            F.collector_times(problem, tiles, r, backends={"triton": be}, column=kind)
        F.compiled_times(problem, cands, r)
        rows += r.values()
        pd.DataFrame(rows).to_csv(out / "specialisation.csv", index=False)
        print(f"{problem.key}: done at {time.time() - t0:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "collector": F.summarize(df)}
    for kind in variants:
        col = f"{kind}_ms"
        if col in df:
            summary[kind] = F.summarize(df.drop(columns=["collector_ms"]).rename(columns={col: "collector_ms"}))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
