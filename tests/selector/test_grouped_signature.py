"""A `_grouped_mm` as kselect reads it from Inductor's lowering: real CPU compiles under
max-autotune, the choices the preprocessing hook sees, read into GroupedProblems."""

from __future__ import annotations

import pytest
import torch

from kselect.kernels.grouped.problem import GroupedProblem
from kselect.selector.compat import autotune
from kselect.selector.compat.signatures import choices_grouped_signature
from kselect.selector.ops.naming import choices_kind
from tests.inductor_sandbox import inductor_sandbox

G, ROWS, N, K = 4, 40, 24, 32


def moe_and_batched(x, w, offs, a3, b3):
    routed = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)  # MoE: A (rows, K), B (G, N, K)^T
    batched = torch._grouped_mm(a3, b3)  # every group M rows, no offsets
    return routed, batched


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    """The choice lists of both grouped GEMMs, as the preprocessing hook received them."""
    seen = []

    def record(choices):
        seen.append(list(choices))
        return choices

    g = torch.Generator().manual_seed(0)
    args = (
        torch.randn(ROWS, K, generator=g).bfloat16(),
        torch.randn(G, N, K, generator=g).bfloat16(),
        torch.tensor([8, 8, 24, ROWS], dtype=torch.int32),
        torch.randn(G, 16, K, generator=g).bfloat16(),
        torch.randn(G, K, N, generator=g).bfloat16(),
    )
    remove = autotune.add_preprocessing_fn(record)
    try:
        with inductor_sandbox(tmp_path_factory.mktemp("grouped"), lambda *a: None):
            torch._dynamo.reset()
            out = torch.compile(moe_and_batched, fullgraph=True)(*args)
    finally:
        remove()
        torch._dynamo.reset()
    for got, want in zip(out, moe_and_batched(*args)):
        torch.testing.assert_close(got, want)
    return seen


def test_each_grouped_gemm_reads_as_its_form_with_inductors_uniform_rows(lowered):
    problems = sorted((choices_grouped_signature(choices)[0] for choices in lowered), key=lambda p: p.form)
    assert problems == [
        GroupedProblem(G, ROWS, N, K, "bf16", "nt", "2d3d", "uniform"),
        GroupedProblem(G, 16, N, K, "bf16", "nn", "3d3d"),
    ]


def test_the_choices_name_the_op_and_the_key_fields_carry_every_input(lowered):
    for choices in lowered:
        assert choices_kind(choices) == "grouped_mm"
        problem, fields, device = choices_grouped_signature(choices)
        assert fields["op"] == "grouped_mm" and device.type == "cpu"
        assert len(fields["inputs"]) == (3 if problem.form == "2d3d" else 2)


def test_a_plain_gemm_is_no_grouped_signature(lowered):
    a, b = lowered[0][0].input_nodes[:2]
    with pytest.raises(ValueError, match="disagree on K"):
        from kselect.selector.compat.signatures import grouped_signature

        grouped_signature([b, a], [ROWS, N])
