"""On a GPU: a "tf32" GEMM multiplies in TF32 and an "fp32" one in IEEE fp32, in the collector's
backends, and the reference stays IEEE under a user's TF32 setting."""

from __future__ import annotations

import pytest
import torch

from kselect.kernels.backend import get_backend
from kselect.kernels.operands import TOLERANCE, make_operands, reference, relative_error
from kselect.kernels.precision import fp32_math
from kselect.kernels.problem import Problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("backend", ["aten", "triton"])
def test_tf32_and_fp32_problems_run_in_their_math(backend):
    """Catches: a tf32 problem run in IEEE (no TF32 error at all) or an fp32 one in TF32 (an
    error of ~1e-3), by either backend; the reference computed in TF32 under the user's setting."""
    errors = {}
    for dtype in ("fp32", "tf32"):
        p = Problem(256, 1024, 2048, dtype, "nt")
        b = get_backend(backend)
        cand = b.candidates(p, "default")[0]
        ops = make_operands(p, "cuda")
        with fp32_math("tf32"):  # the user's setting is TF32: the reference must not follow it
            ref = reference(p, ops)
        with fp32_math(dtype):
            b.runner(b.compile(cand, p), ops)()
            torch.cuda.synchronize()
        errors[dtype] = relative_error(ops.out, ref)
        assert errors[dtype] <= TOLERANCE[dtype], (backend, dtype, errors)
    assert errors["fp32"] < 1e-5 < errors["tf32"], errors
