"""Labels for a GEMM with its epilogue (training/measure/epilogue_labels.py) on the CPU: a frozen
Linear + GELU compiled twice by Inductor, once pinned to MKL (GELU its own kernel) and once to the
C++ GEMM template (GELU fused into its store), each checked against eager and timed whole. The
CPU's times mean nothing; what Inductor built for each pin is the point."""

from __future__ import annotations

import math

import numpy as np
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


def _the_records_become_training_rows_with_the_epilogue_the_lowering_read(pinned, data):
    """On disk (training/data/epilogue_rows.py) and back as dataset rows of one GEMM + epilogue,
    whose epilogue feature block is what the selector's own epilogue_block gives the Epilogue
    read during the lowering: a fusable GELU (erf among its ops) that the C++ template fuses."""
    from kselect.selector.model.features import EPILOGUE_FEATURE_NAMES
    from kselect.training.data.epilogue_rows import (
        KEY_MARK,
        append_records,
        epilogue_columns,
        label_rows,
        record_of,
    )
    from kselect.training.data.synthetic import FINGERPRINT

    append_records(data, [record_of("linear-gelu", t) for t in pinned.values()])
    rows = label_rows(data)
    assert sorted(rows["candidate_key"]) == sorted(pinned) and (rows["status"] == "ok").all()
    assert rows["problem_key"].nunique() == 1 and KEY_MARK in rows["problem_key"][0]
    assert rows["problem_key"][0].startswith("mm:64x80x96:fp32:nt")  # a frozen Linear is x @ W^T
    assert dict(zip(rows["candidate_key"], rows["time_ms"])) == {k: t.ms for k, t in pinned.items()}
    block = epilogue_columns(rows, FINGERPRINT)
    col = {name: block[:, i] for i, name in enumerate(EPILOGUE_FEATURE_NAMES)}
    cpp = list(rows["candidate_key"]).index(CPP)
    assert (col["epi_fusable"] == 1).all() and (col["epi_ops_activation"] >= 1).all()
    assert col["log2_epi_out_bytes"][0] == np.log2(1 + 64 * 80 * 4)  # GELU's fp32 output, written once
    assert col["epi_output_escapes"][0] == 0  # the GEMM's output feeds the GELU alone
    assert list(col["cand_fuses_epilogue"]) == [float(i == cpp) for i in range(len(rows))]


def test_labels_of_a_linear_gelu(tmp_path):
    """One test (its two compiles run once, also under xdist)."""
    pinned = _pinned(tmp_path)
    _each_pin_compiles_as_inductor_would_ship_it(pinned)
    _the_label_sets_the_fused_template_against_aten_and_its_separate_kernel(pinned)
    _the_records_become_training_rows_with_the_epilogue_the_lowering_read(pinned, tmp_path / "data")
