"""On the GPU: our Triton candidate space equals the one Inductor builds (torch 2.11 H200)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from kselect.kernels import Problem  # noqa: E402
from kselect.kernels.triton.space import triton_space  # noqa: E402

SHAPES = [(333, 7168, 5120), (7, 3584, 14336), (4096, 4096, 4096), (128, 128, 65536), (100, 3000, 1000)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_space_matches_inductor(shape):
    from torch._inductor import config as ic

    from kselect.kernels.operands import make_operands
    from kselect.selector.compat.template_configs import choices_handler, make_filtering_choices
    from kselect.training.measure.faithfulness import EXHAUSTIVE_TRITON_PATCHES

    p = Problem(*shape, "bf16", "nt", "mm")
    record = []
    handler = make_filtering_choices(keep=lambda c: c.backend == "aten", record=record)
    torch._dynamo.reset()
    ops = make_operands(p, "cuda")
    with ic.patch(EXHAUSTIVE_TRITON_PATCHES), choices_handler(handler):
        torch.compile(lambda a, b: a @ b, dynamic=False)(ops.a, ops.b)
    inductor = [c for _, c in record if c.backend == "triton"]
    ours = triton_space(p, "exhaustive")
    assert len(inductor) == len(set(inductor)), "Inductor produced duplicates"
    missing, extra = set(inductor) - set(ours), set(ours) - set(inductor)
    assert not missing and not extra, (
        len(inductor),
        len(ours),
        sorted(map(str, missing))[:5],
        sorted(map(str, extra))[:5],
    )
