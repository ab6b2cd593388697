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
