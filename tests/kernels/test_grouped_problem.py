"""The grouped GEMM problem: its key, its validation, and the rows its routing gives -- the
uniform split checked against Inductor's own benchmark offsets."""

from __future__ import annotations

import numpy as np
import pytest

from kselect.kernels.grouped.problem import GroupedProblem, inductor_offsets
from kselect.kernels.problem import Problem, ProblemError


@pytest.mark.parametrize(
    "problem",
    [
        GroupedProblem(8, 4096, 28672, 4096),
        GroupedProblem(32, 8192, 7168, 2048, routing="zipf1.2", seed=3, model="deepseek"),
        GroupedProblem(4, 128, 64, 512, "fp16", "nn", "3d3d"),
        GroupedProblem(4, 128, 64, 512, layout="tn", form="2d2d", routing="zipf0.8"),
        GroupedProblem(6, 96, 256, 64, form="3d2d"),
    ],
)
def test_the_key_round_trips_and_names_the_routing(problem):
    back = GroupedProblem.from_key(problem.key)
    assert back == problem and back.key == problem.key
    assert problem.routing in problem.key
    assert ":s" in problem.key if problem.routing != "uniform" else ":s" not in problem.key


def test_a_plain_gemm_key_is_no_grouped_key_and_plain_problems_are_unchanged():
    plain = Problem(64, 128, 256)
    assert plain.key == "mm:64x128x256:bf16:nt"  # the committed datasets' keys
    with pytest.raises(ProblemError, match="not a grouped_mm problem key"):
        GroupedProblem.from_key(plain.key)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"G": 0}, "G must be positive"),
        ({"M": "x"}, "M must be an integer"),
        ({"form": "2d4d"}, "unknown grouped form"),
        ({"routing": "zipf"}, "unknown routing"),
        ({"routing": "zipf0"}, "unknown routing"),
        ({"routing": "normal"}, "unknown routing"),
        ({"form": "3d3d", "routing": "zipf1.2"}, "has no offsets"),
        ({"dtype": "int8"}, "unknown dtype"),
        ({"seed": -1}, "seed must be >= 0"),
    ],
)
def test_bad_fields_are_refused_by_name(kwargs, message):
    fields = {"G": 8, "M": 64, "N": 128, "K": 256, **kwargs}
    with pytest.raises(ProblemError, match=message):
        GroupedProblem(**fields)


def _inductor_create_offsets(end: int, groups: int, alignment: int) -> list[int]:
    """Inductor's own benchmark offsets, under a real graph's size variables."""
    import torch
    from torch._inductor import ir
    from torch._inductor.graph import GraphLowering
    from torch._inductor.kernel.mm_grouped import create_offsets
    from torch._inductor.virtualized import V

    graph = GraphLowering(torch.fx.symbolic_trace(torch.nn.Identity()))
    box = ir.InputBuffer(name="offs", layout=ir.FixedLayout(torch.device("cpu"), torch.int32, [groups], [1]))
    with V.set_graph_handler(graph):
        return create_offsets(box, True, False, end, 1, 1, alignment).tolist()


@pytest.mark.parametrize("end, groups", [(2, 8), (64, 8), (8192, 32), (1000, 60), (96, 128), (16384, 20)])
def test_uniform_offsets_are_the_ones_inductor_benchmarks_with(end, groups):
    assert inductor_offsets(end, groups, 8).tolist() == _inductor_create_offsets(end, groups, 8)
    problem = GroupedProblem(groups, end, 64, 64)
    assert problem.offsets().tolist() == _inductor_create_offsets(end, groups, 8)


def test_zipf_routing_is_seeded_skewed_and_keeps_every_row():
    base = GroupedProblem(32, 8192, 4096, 7168)
    skewed = base.with_routing("zipf1.2", seed=5)
    sizes = skewed.group_sizes()
    assert sizes.sum() == 8192 and len(sizes) == 32 and (sizes >= 0).all()
    assert np.array_equal(sizes, skewed.with_routing("zipf1.2", seed=5).group_sizes())
    assert not np.array_equal(sizes, skewed.with_routing("zipf1.2", seed=6).group_sizes())
    assert sizes.max() > 4 * base.group_sizes().max()  # a hot expert, as real routing has
    assert np.all(np.diff(skewed.offsets()) >= 0) and skewed.offsets()[-1] == 8192


def test_a_ragged_k_keeps_every_group_start_aligned():
    sizes = GroupedProblem(6, 64, 64, 1000, form="2d2d", routing="zipf1.0", seed=2).group_sizes()
    assert sizes.sum() == 1000 and (np.cumsum(sizes)[:-1] % 8 == 0).all()
