"""Inductor's Triton grouped_mm template compiled for sm_90 on this CPU: the persistent kernel
as Hopper runs it (wgmma, TMA tensor loads), from the installed torch's own template text."""

import pytest

pytest.importorskip("triton")

from kselect.kernels.grouped.cross_compile import cross_compile, render_source  # noqa: E402
from kselect.kernels.grouped.problem import GroupedProblem  # noqa: E402
from kselect.kernels.grouped.space import H100_SMEM_OPTIN, triton_grouped_space  # noqa: E402
from kselect.kernels.triton.cross_compile import ptxas_facts  # noqa: E402

DEEPSEEK_DOWN = GroupedProblem(32, 8192, 7168, 2048, model="deepseek-v3-ep8/down/t8192")


@pytest.fixture(scope="module")
def compiled():
    config = triton_grouped_space(DEEPSEEK_DOWN)[0]  # the first (and quickest to compile) Inductor keeps
    return config, cross_compile(DEEPSEEK_DOWN, config)


def test_a_config_compiles_for_hopper_as_the_template_asks(compiled):
    config, got = compiled
    ptx = got["ptx"]
    assert ".target sm_90" in ptx and "wgmma.mma_async" in ptx  # Hopper's MMA
    assert "cp.async.bulk.tensor" in ptx  # the template's TMA descriptor loads
    assert 0 < got["shared_bytes"] <= H100_SMEM_OPTIN
    facts = ptxas_facts(ptx)
    assert facts["registers"] > 0 and facts["spill_store_bytes"] >= 0


def test_the_source_is_the_templates_with_this_problems_sizes(compiled):
    config, _ = compiled
    src = render_source(DEEPSEEK_DOWN, config, num_sms=132)
    assert "for g in tl.range(G)" in src and "tl.make_tensor_descriptor" in src
    assert "M: tl.constexpr = 8192" in src and "K: tl.constexpr = 2048" in src
    assert f"BLOCK_M: tl.constexpr = {config.get('BLOCK_M')}" in src and "NUM_SMS: tl.constexpr = 132" in src
