"""fp32 GEMMs in IEEE or TF32 math: kselect names them apart ("fp32" / "tf32"), reads which one
a user's GEMM is from torch's setting, and the collector sets it only where it must."""

from __future__ import annotations

import pytest
import torch
from torch._inductor import ir

from kselect.kernels import precision
from kselect.kernels.operands import TOLERANCE, make_operands, reference
from kselect.kernels.problem import Problem, ProblemError
from kselect.selector.compat import signatures
from kselect.selector.ops import gate as op_gate  # noqa: E402


@pytest.fixture
def tf32_setting():
    """Restore torch's fp32 matmul settings after the test: CUDA's, and oneDNN's, which
    `set_float32_matmul_precision` also changes (a later CPU compile in this process would
    otherwise lower a frozen Linear another way)."""
    backends = (torch.backends.cuda.matmul, torch.backends.mkldnn.matmul)
    before = [b.fp32_precision for b in backends]
    overall = torch.get_float32_matmul_precision()
    yield torch.backends.cuda.matmul
    torch.set_float32_matmul_precision(overall)
    for b, setting in zip(backends, before):
        b.fp32_precision = setting
    assert [b.fp32_precision for b in backends] == before
    assert torch.get_float32_matmul_precision() == overall


def _cuda(name, size, dtype):
    return ir.InputBuffer(name=name, layout=ir.FixedLayout(torch.device("cuda"), dtype, size, [size[1], 1]))


def test_the_setting_names_the_dtype_and_the_context_restores_it(tf32_setting):
    """Catches: fp32 read as TF32 by default; a context that leaves TF32 on after it, or that
    touches the setting where it already matches (inside a user's compile)."""
    assert precision.fp32_math_dtype() == "fp32"  # torch's default: IEEE
    with precision.fp32_math("tf32"):
        assert precision.fp32_math_dtype() == "tf32"
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert precision.fp32_math_dtype() == "fp32"
    torch.set_float32_matmul_precision("high")  # how users switch TF32 on
    assert precision.fp32_math_dtype() == "tf32"
    tf32_setting.fp32_precision = "none"
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    with precision.fp32_math("tf32"):  # matches: nothing set, nothing to restore
        assert tf32_setting.fp32_precision == "tf32"
    with precision.fp32_math("fp32"):
        assert precision.fp32_math_dtype() == "fp32"
    assert precision.fp32_math_dtype() == "tf32"
    with precision.fp32_math("bf16"):  # not an fp32 GEMM: untouched
        assert precision.fp32_math_dtype() == "tf32"


def test_gemm_dtype_is_tf32_only_for_fp32_on_cuda_under_tf32(tf32_setting):
    """Catches: a CPU fp32 GEMM (MKL, no TF32) or a bf16 one renamed; an unknown dtype let through."""
    tf32_setting.fp32_precision = "tf32"
    assert precision.gemm_dtype(torch.float32, torch.device("cuda")) == "tf32"
    assert precision.gemm_dtype(torch.float32, torch.device("cpu")) == "fp32"
    assert precision.gemm_dtype(torch.bfloat16, torch.device("cuda")) == "bf16"
    tf32_setting.fp32_precision = "ieee"
    assert precision.gemm_dtype(torch.float32, "cuda") == "fp32"
    with pytest.raises(ProblemError):
        precision.gemm_dtype(torch.int8, "cuda")


def test_a_tf32_problem_has_fp32_operands_and_a_full_precision_reference(tf32_setting):
    """Catches: tf32 operands made in another dtype; a reference that changes the user's
    setting; a tolerance as tight as IEEE fp32's. (That the reference multiplies in IEEE fp32
    under TF32 shows only on a GPU: the GPU test.)"""
    p = Problem(32, 48, 64, "tf32", "nt")
    assert p.key == "mm:32x48x64:tf32:nt" and p.dtype_bytes == 4
    ops = make_operands(p, "cpu")
    assert ops.a.dtype == ops.b.dtype == ops.out.dtype == torch.float32
    tf32_setting.fp32_precision = "tf32"
    exact = ops.a.double().matmul(ops.b.double()).float()
    assert torch.allclose(reference(p, ops), exact, rtol=1e-5, atol=1e-5)  # (the CPU has no TF32)
    assert tf32_setting.fp32_precision == "tf32"  # the reference leaves the user's setting
    assert TOLERANCE["fp32"] < TOLERANCE["tf32"] <= TOLERANCE["bf16"]


def test_the_selector_reads_a_cuda_fp32_gemm_as_tf32_and_keys_it_apart(tf32_setting):
    """Catches: a TF32 GEMM and an IEEE fp32 GEMM of the same tensors sharing a decision (their
    kernels differ), or a model of one deciding the other."""
    nodes = (_cuda("a", [64, 96], torch.float32), _cuda("b", [96, 80], torch.float32))
    tf32_setting.fp32_precision = "tf32"
    tf32, tf32_fields, _ = signatures.gemm_signature(nodes, [64, 80], "mm")
    tf32_setting.fp32_precision = "ieee"
    ieee, ieee_fields, _ = signatures.gemm_signature(nodes, [64, 80], "mm")
    assert (tf32.dtype, ieee.dtype) == ("tf32", "fp32")
    assert tf32_fields != ieee_fields and "math" not in ieee_fields  # other keys stay as they were

    def gate_with(dtypes):
        return op_gate.OpGate(lambda device: type("Ranker", (), {"dtypes": dtypes})())

    inputs = ir_inputs(nodes)
    tf32_setting.fp32_precision = "tf32"
    assert gate_with(("tf32",)).admit("mm", inputs) == ("mm", True)  # decided
    assert gate_with(("bf16", "fp32")).admit("mm", inputs) == ("mm", False)  # a TF32 GEMM it lacks
    tf32_setting.fp32_precision = "ieee"
    assert gate_with(("tf32",)).admit("mm", inputs) == ("mm", False)


def ir_inputs(nodes):
    from torch._inductor.kernel_inputs import MMKernelInputs

    return MMKernelInputs(list(nodes))
