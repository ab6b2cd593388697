"""Labels for a GEMM with its epilogue (training/measure/epilogue_labels.py) on the CPU: a frozen
Linear + GELU compiled twice by Inductor, once pinned to MKL (GELU its own kernel) and once to the
C++ GEMM template (GELU fused into its store), each checked against eager and timed whole. The
CPU's times mean nothing; what Inductor built for each pin is the point."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from kselect.training.measure.epilogue_labels import EpilogueTiming, epilogue_label, time_pinned  # noqa: E402

from inductor_sandbox import linear_gelu  # noqa: E402

MKL, CPP = "aten:mkl_linear", "cpp:cpp_CppMicroGemmFP32Vec"


def _pinned(tmp):
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp / "inductor"))
    model = linear_gelu()
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(1))
    try:
        return {
            key: time_pinned(model, (x,), key, "cpu", repeats=5, warmup=1, inductor_config={"freezing": True})
            for key in (MKL, CPP)
        }
    finally:
        mp.undo()


def _each_pin_compiles_as_inductor_would_ship_it(pinned):
    mkl, cpp = pinned[MKL], pinned[CPP]
    assert not mkl.error and not cpp.error, (mkl.error, cpp.error)
    # the C++ template took the GELU into its store; after MKL's call it is a kernel of its own
    assert cpp.fused is True and mkl.fused is False
    assert mkl.kernels >= 1 and cpp.kernels >= 1
    assert mkl.ms > 0 and cpp.ms > 0
    for t in (mkl, cpp):  # the epilogue kselect read while Inductor lowered the GEMM
        assert t.epilogue["fusable"] and "erf" in t.epilogue["ops"] and t.epilogue["out_bytes"] == 64 * 80 * 4


def _the_label_sets_the_fused_template_against_aten_and_its_separate_kernel(pinned):
    label = epilogue_label(list(pinned.values()))
    assert label["aten"] == MKL and label["template"] == CPP and label["template_fused"] is True
    assert label["ratio"] == pytest.approx(pinned[CPP].ms / pinned[MKL].ms)
    # a failed candidate never labels; without one side there is no ratio
    broken = EpilogueTiming("triton:mm:x", error="not among Inductor's choices")
    assert epilogue_label([pinned[MKL], broken])["ratio"] is None
    assert math.isnan(broken.ms)


def test_labels_of_a_linear_gelu(tmp_path):
    """One test (its two compiles run once, also under xdist)."""
    pinned = _pinned(tmp_path)
    _each_pin_compiles_as_inductor_would_ship_it(pinned)
    _the_label_sets_the_fused_template_against_aten_and_its_separate_kernel(pinned)
