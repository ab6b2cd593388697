"""Device smoke: the K-specialised Triton mm compiles, is right and fast on non-EVEN_K shapes."""
import sys


def main() -> int:
    import torch
    from kselect.kernels.backend import get_backend
    from kselect.kernels.candidate import Candidate
    from kselect.kernels.problem import Problem
    from kselect.kernels.operands import rotating_operands, reference, relative_error
    from kselect.kernels.timing import time_runners, warm_gpu
    tb = get_backend("triton")
    cand = Candidate.make("triton", "mm", BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, num_stages=4, num_warps=4)
    warm_gpu()
    ok = True
    for (m, n, k) in [(64, 18176, 4544), (64, 18176, 4545), (333, 7168, 5120)]:
        p = Problem(M=m, N=n, K=k, layout="nt")
        err = tb.precompile([(cand, p)], workers=1)
        sets = rotating_operands(p, 60 << 20, "cuda")
        plan = tb.compile(cand, p)
        runners = [tb.runner(plan, s) for s in sets]
        runners[0](); torch.cuda.synchronize()
        e = relative_error(sets[0].out, reference(p, sets[0]))
        t = time_runners(runners)
        print(p.key, "precompile errors", err, "rel_err", e, "ms", round(t.median_ms, 4), flush=True)
        ok &= (not err) and e < 1e-2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
