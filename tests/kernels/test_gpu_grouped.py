"""On an sm_90 GPU: Inductor's grouped-mm lowering builds exactly kselect's grouped space, and
every choice runs on skewed and uniform routing with ATen's result."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from kselect.kernels.grouped.problem import GroupedProblem  # noqa: E402
from kselect.kernels.grouped.space import ATEN, grouped_space  # noqa: E402

needs_sm90 = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0) or torch.version.hip,
    reason="Inductor's Triton grouped-mm template needs CUDA sm_90+",
)
PROBLEMS = [
    GroupedProblem(8, 64, 1024, 512, routing="zipf1.2", seed=3),  # decode-like: 8 rows per group on average
    GroupedProblem(8, 2048, 512, 1024),  # prefill-like, Inductor's own uniform split
    GroupedProblem(4, 1000, 256, 384, routing="zipf0.8", seed=1),  # rows not a multiple of anything
]


def _smem() -> int:
    return torch.cuda.get_device_properties(0).shared_memory_per_block_optin


@needs_sm90
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.key)
def test_inductor_builds_our_space_and_every_choice_matches_aten(problem):
    from kselect.training.measure.grouped_collect import measure_inductor

    measured = measure_inductor(problem, "cuda", target_ms=0.1)
    got = [cand for cand, _ in measured]
    assert got == grouped_space(problem, smem_limit=_smem()), (len(got), len(grouped_space(problem, _smem())))
    failed = {cand.key: fields for cand, fields in measured if fields.get("status", "ok") != "ok"}
    assert not failed
    assert all(fields["time_ms"] > 0 for _, fields in measured)


@needs_sm90
def test_routing_changes_what_the_kernels_see():
    """The same shape under uniform and Zipf routing: ATen's output differs only where rows move."""
    from kselect.kernels.grouped import run

    uniform = GroupedProblem(8, 512, 256, 256)
    skewed = uniform.with_routing("zipf1.2", seed=2)
    a = run.grouped_operands(uniform, "cuda")
    b = run.grouped_operands(skewed, "cuda")
    assert torch.equal(a.a, b.a) and torch.equal(a.b, b.b) and not torch.equal(a.offs, b.offs)
    assert int(b.offs[-1]) == 512 and torch.all(b.offs[1:] >= b.offs[:-1])
    assert run.relative_error(run.aten_grouped(a), run.aten_grouped(b)) > 0


@needs_sm90
def test_aten_alone_is_one_row():
    from kselect.training.measure.grouped_collect import measure_aten

    ((cand, fields),) = measure_aten(PROBLEMS[0], "cuda", target_ms=0.1)
    assert cand == ATEN and fields["time_ms"] > 0 and fields["rel_error"] == 0


@needs_sm90
def test_stock_picks_one_of_its_own_choices_and_the_floor_is_cheaper():
    from kselect.kernels.grouped import run

    problem = PROBLEMS[1]
    stock = run.stock_compile(run.grouped_operands(problem, "cuda"))
    assert stock.candidate in grouped_space(problem, smem_limit=_smem())
    assert 0 < stock.one_kept_s < stock.compile_s
