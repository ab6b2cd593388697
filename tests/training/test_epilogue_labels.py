"""Labels for a GEMM with its epilogue (training/measure/epilogue_labels.py) on the CPU: a frozen
Linear + GELU compiled twice by Inductor, once pinned to MKL (GELU its own kernel) and once to the
C++ GEMM template (GELU fused into its store), each checked against eager and timed whole. The
CPU's times mean nothing; what Inductor built for each pin is the point."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.problem import Problem  # noqa: E402
from kselect.training.data.dataset import DatasetError  # noqa: E402
from kselect.training.measure.epilogue_labels import (  # noqa: E402
    EpilogueTiming,
    collect_epilogue_labels,
    epilogue_label,
    label_case,
)

from inductor_sandbox import linear_gelu  # noqa: E402

MKL, CPP = "aten:mkl_linear", "cpp:cpp_CppMicroGemmFP32Vec"


class FrozenLinearGelu:
    """A GEMM + epilogue case as the collector takes one (training/workloads/epilogues.py's
    EpilogueCase): the frozen Linear + GELU, whose GEMM the CPU's C++ template can take."""

    name = "linear-gelu:64x80x96:fp32"

    def __init__(self):
        self.function = linear_gelu()

    def problem(self):
        return Problem(64, 80, 96, "fp32", "nt")

    def operands(self, device, seed):
        return (torch.randn(64, 96, generator=torch.Generator().manual_seed(seed)),)


def _pinned(tmp):
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp / "inductor"))
    try:
        timings = label_case(
            FrozenLinearGelu(), [MKL, CPP], "cpu", repeats=5, warmup=1, seed=1, inductor_config={"freezing": True}
        )
        return dict(zip((MKL, CPP), timings))
    finally:
        mp.undo()


def _each_pin_compiles_as_inductor_would_ship_it(pinned):
    mkl, cpp = pinned[MKL], pinned[CPP]
    assert not mkl.error and not cpp.error, (mkl.error, cpp.error)
    # the C++ template took the GELU into its store; after MKL's call it is a kernel of its own
    assert cpp.fused is True and mkl.fused is False
    assert mkl.kernels >= 1 and cpp.kernels >= 1
    assert mkl.ms > 0 and cpp.ms > 0
    assert mkl.ms == mkl.step_ms and cpp.ms == cpp.step_ms  # on the CPU the label is the wall clock
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
    from kselect.selector.model.feature_blocks import EPILOGUE_FEATURE_NAMES
    from kselect.training.data.epilogue_rows import (
        KEY_MARK,
        append_records,
        epilogue_columns,
        label_rows,
        record_of,
    )
    from kselect.training.data.synthetic import FINGERPRINT

    case = FrozenLinearGelu()
    append_records(data, [record_of(case.name, t, case.problem()) for t in pinned.values()])
    # the collector resumes: a case already in the file is not compiled again
    again = collect_epilogue_labels([case], data, "cpu", candidates=[MKL, CPP], say=lambda _: None)
    assert again["skipped"] == 1 and again["cases"] == 0
    with pytest.raises(DatasetError, match="measured on"):  # labels of another card never join a dataset
        (data / "fingerprint.json").write_text('{"fingerprint_id": "another-card", "gpu_name": "GPU"}')
        collect_epilogue_labels([case], data, "cpu", candidates=[MKL], say=lambda _: None)
    lines = [json.loads(line) for line in (data / "epilogue_labels.jsonl").read_text().splitlines()]
    assert {line["candidate"]["template"]: line["step_ms"] for line in lines} == {
        t.pinned["template"]: t.step_ms for t in pinned.values()
    }
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


def test_each_case_pins_aten_and_a_seeded_sample_of_stock_configs():
    from kselect.kernels.triton.space import triton_space
    from kselect.training.measure.epilogue_labels import pinned_candidates
    from kselect.training.workloads.epilogues import EpilogueCase, EpilogueCaseError, epilogue_cases

    cases = epilogue_cases("llama3-8b")
    assert len({c.name for c in cases}) == len(cases) == 80
    bias = next(c for c in cases if c.kind == "bias-gelu")
    assert bias.problem().op == "addmm" and cases[0].problem().key == "mm:8x4096x4096:bf16:nt"
    keys = pinned_candidates(bias.problem(), 8)
    stock = sorted(c.key for c in triton_space(bias.problem(), "default"))
    assert keys[0] == "aten:addmm" and len(set(keys)) == 9 and set(keys[1:]) <= set(stock)
    assert keys == pinned_candidates(bias.problem(), 8) != pinned_candidates(bias.problem(), 8, seed=1)
    assert pinned_candidates(bias.problem(), 1000)[1:] == stock  # fewer configs than asked: all of them
    x, w, b = epilogue_cases("smoke")[1].operands("cpu")  # bias-gelu: x, W and a bias row
    assert (x.shape, w.shape, b.shape, x.dtype) == ((64, 96), (80, 96), (80,), torch.float32)
    with pytest.raises(EpilogueCaseError, match="unknown epilogue kind"):
        EpilogueCase("softmax", 8, 8, 8)
