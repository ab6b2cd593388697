"""kselect's grouped-GEMM candidate space against Inductor's own config list and prune."""

from __future__ import annotations

import pytest

from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN, H100_SMEM_OPTIN, grouped_space, triton_grouped_space


def _inductor_choices(problem: GroupedProblem, smem: int, monkeypatch) -> list[tuple]:
    """What Inductor's early_config_prune keeps, on a card of `smem` bytes per block."""
    from torch._inductor.kernel import mm_grouped

    monkeypatch.setattr(mm_grouped, "get_gpu_shared_memory", lambda: smem)  # no GPU here: its size
    named = {"A_IS_2D": problem.form.startswith("2d"), "B_IS_2D": problem.form.endswith("2d")}
    kept = mm_grouped.early_config_prune(
        problem.G, problem.M, problem.dtype_bytes, mm_grouped.grouped_mm_configs(), named
    )
    return [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_stages, c.num_warps) for c in kept]


def _ours(problem, smem) -> list[tuple]:
    return [
        tuple(c.get(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps"))
        for c in triton_grouped_space(problem, smem)
    ]


@pytest.mark.parametrize(
    "problem",
    [
        GroupedProblem(8, 2, 28672, 4096),  # decode: 0 rows per group on average
        GroupedProblem(60, 1900, 2816, 2048),  # ~31 rows per group
        GroupedProblem(128, 6000, 1536, 2048),  # ~46
        GroupedProblem(32, 8192, 4096, 7168),  # 256
        GroupedProblem(4, 40, 64, 512, form="3d3d"),  # M per group as is
        GroupedProblem(4, 16, 64, 512, form="2d2d"),
        GroupedProblem(4, 100, 64, 512, "fp32", form="3d2d"),
    ],
)
@pytest.mark.parametrize("smem", [H100_SMEM_OPTIN, 101_376])  # Hopper; a 99 KiB card
def test_the_triton_space_is_inductors(problem, smem, monkeypatch):
    theirs = _inductor_choices(problem, smem, monkeypatch)
    assert _ours(problem, smem) == theirs and theirs


def test_aten_comes_first_and_the_space_narrows_by_backend():
    problem = GroupedProblem(8, 4096, 28672, 4096)
    full = grouped_space(problem)
    assert full[0] == ATEN and len(full) == 1 + len(triton_grouped_space(problem))
    assert grouped_space(problem, backends=("aten",)) == [ATEN]
    assert ATEN not in grouped_space(problem, backends=("triton",))
