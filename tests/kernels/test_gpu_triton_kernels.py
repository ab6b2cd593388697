"""On the GPU: our Triton kernels compile in the background while others run, give correct
results for N of each specialisation class."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from kselect.kernels import Problem  # noqa: E402
from kselect.kernels.triton.backend import TritonBackend  # noqa: E402
from kselect.kernels.triton.space import triton_space  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _check(backend, cand, problem):
    from kselect.kernels.operands import TOLERANCE, make_operands, reference, relative_error

    ops = make_operands(problem, "cuda")
    plan = backend.compile(cand, problem)
    backend.runner(plan, ops)()
    torch.cuda.synchronize()
    assert relative_error(ops.out, reference(problem, ops)) <= TOLERANCE[problem.dtype], cand.key


@needs_cuda
@pytest.mark.parametrize("n", [4096, 4104, 4099], ids=["n%16", "n%8", "odd-n"])
def test_background_compiles_serve_each_n_class(n):
    problem = Problem(333, n, 1024, "bf16", "nt")
    cands = [c for c in triton_space(problem, "default") if c.template != "decompose_k"][:6]
    backend = TritonBackend()
    assert backend.precompile([(c, problem) for c in cands], workers=2, wait=False) == {}
    for cand in cands:
        _check(backend, cand, problem)
    assert not backend._pending


@needs_cuda
@pytest.mark.parametrize(
    "shape",
    [(333, 7168, 5120, "nt"), (300, 4104, 1000, "nn"), (17, 4099, 4099, "tn"), (8, 9216, 3072, "tt")],
    ids=["nt", "nn-n%8-oddk", "tn-odd", "tt-small-m"],
)
def test_large_mm_tiles_are_correct(shape):
    """The wide tiles (K loop of int32 offsets, at least one step) over each N class, odd M/K."""
    from kselect.kernels.candidate import Candidate

    m, n, k, layout = shape
    problem = Problem(m, n, k, "bf16", layout)
    backend = TritonBackend()
    for bm, bn, bk, stages, warps in ((128, 256, 64, 4, 8), (16, 256, 128, 3, 2)):
        cand = Candidate.make(
            "triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_stages=stages, num_warps=warps
        )
        _check(backend, cand, problem)


@needs_cuda
def test_large_mm_tile_serves_bmm():
    from kselect.kernels.candidate import Candidate

    problem = Problem(200, 520, 264, "bf16", "nt", "bmm", batch=3)
    cand = Candidate.make("triton", "mm", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_stages=4, num_warps=8)
    _check(TritonBackend(), cand, problem)
