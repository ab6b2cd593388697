"""fp8 `_scaled_mm`'s Triton kernels compiled for sm_90 on this CPU (Triton lowers to PTX and runs
ptxas on the host; no GPU): configs of both scaled templates from Inductor's space compile, use
fp8 wgmma, and the plan's scaling and out dtype reach the compiled kernel."""

import re

import pytest

pytest.importorskip("triton")

from kselect.kernels.problem import Problem  # noqa: E402
from kselect.kernels.triton.backend import launch_plan  # noqa: E402
from kselect.kernels.triton.cross_compile import compile_ptx, plan_from_dict, plan_to_dict  # noqa: E402
from kselect.kernels.triton.space import triton_space  # noqa: E402

H100_SMS = 132


def _plan(m, n, k, template, scaling, out_dtype="bf16", pick=0, fast_accum=False):
    """The pick-th DEFAULT candidate of `template` for an fp8 problem, as a launch plan."""
    p = Problem(m, n, k, "fp8e4m3", "nt", "scaled_mm", out_dtype=out_dtype, scaling=scaling, fast_accum=fast_accum)
    cands = [c for c in triton_space(p, "default") if c.template == template]
    return launch_plan(cands[pick], p, H100_SMS)


@pytest.mark.parametrize(
    "m, template, scaling, out_dtype",
    [
        (4096, "scaled_mm", "tensorwise", "bf16"),
        (4096, "scaled_persistent_tma", "rowwise", "bf16"),  # prefill, device TMA
        (4096, "scaled_persistent_tma", "tensorwise", "fp32"),
    ],
)
def test_scaled_configs_compile_for_sm90_with_fp8_wgmma(m, template, scaling, out_dtype):
    """Inductor's first DEFAULT config of each scaled template (128-row tiles) runs fp8 wgmma."""
    plan = _plan(m, 4096, 4096, template, scaling, out_dtype)
    assert plan_from_dict(plan_to_dict(plan)) == plan
    ptx = compile_ptx(plan)
    assert re.search(r"wgmma\.mma_async[^;]*\.f32\.e4m3\.e4m3", ptx)  # fp8 tensor cores, not an upcast
    assert ("cp.async.bulk.tensor" in ptx) == (template == "scaled_persistent_tma")  # TMA loads


def test_decode_tile_compiles_and_flags_reach_the_kernel():
    """A decode tile (BM16) compiles too (sm_90's wgmma needs 64 rows: Triton runs it as mma.sync,
    as it would Inductor's kernel); ROWWISE and USE_FAST_ACCUM each make another binary."""
    base = _plan(16, 4096, 4096, "scaled_mm", "rowwise")
    assert dict(base.constexprs)["BLOCK_M"] == 16
    ptx = compile_ptx(base)
    assert "mma.sync" in ptx
    for other in (
        _plan(16, 4096, 4096, "scaled_mm", "tensorwise"),
        _plan(16, 4096, 4096, "scaled_mm", "rowwise", fast_accum=True),
    ):
        assert other.compile_key != base.compile_key
        assert compile_ptx(other) != ptx
