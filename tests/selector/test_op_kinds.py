"""Every op that reaches kselect's hooks is identified by what Inductor lowers (selector/ops/naming.py, gate.py).

Real lowerings on this CPU (torch 2.13, max-autotune): one compiled function holds an op of each
kind kselect does not model -- `a @ b + c @ d` (mm_plus_mm), `_int_mm`, fp8 `_scaled_mm`
tensorwise and rowwise, `_grouped_mm` (2D x 3D with offsets), a conv2d, and an fp16 mm that a
ranker with fp32 data only refuses -- beside the GEMMs it does model (mm, addmm, bmm, baddbmm in
fp32). It is compiled twice: stock (kselect off) and with kselect on, which ranks the EXHAUSTIVE
space for the GEMMs it decides while the user's DEFAULT stays Inductor's setting. Recorded from Inductor itself: every choice
list the preprocessing hook hands on (a recorder behind kselect's), the GEMM search space in
force whenever Inductor generates a template's configs (a spy on InductorChoices.get_ktc), and
what it benchmarked (a feedback saver).

On the CPU each op lowers to its ATen kernel alone; Inductor's `external_matmul` adds a second
extern choice to every mm (the fp16 one kselect must leave whole, the fp32 one it ranks), which
costs no C++ compile as the CPP micro-GEMM would. What the GPU adds (Triton, CUTLASS, ...) is
in tests/selector/test_gpu_op_kinds.py.
"""

from __future__ import annotations

import logging
import re
import warnings
from typing import Callable, NamedTuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch._inductor import ir  # noqa: E402
from torch._inductor.choices import InductorChoices  # noqa: E402
from torch._inductor.kernel_inputs import MMKernelInputs  # noqa: E402

from kselect.selector.compat import autotune, choice_candidates, template_configs  # noqa: E402
from kselect.selector.decide.rankers import RankerUnavailable  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.ops import gate as op_gate  # noqa: E402
from kselect.selector.ops import naming, registry  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

F8 = torch.float8_e4m3fn
# (kind as kselect logs it, Inductor's extern kernel, the op name Inductor passes its templates
# stage (None: the lowering never calls it), the first input's dtype) per op kselect leaves alone
UNMODELLED = {
    "mm_plus_mm": ("_mm_plus_mm", "mm_plus_mm", torch.float32),
    "int_mm": ("_int_mm", "int_mm", torch.int8),
    "scaled_mm": ("_scaled_mm", "scaled_mm", F8),
    "grouped_mm": ("_grouped_mm", None, torch.bfloat16),
    "conv": ("convolution", None, torch.float32),
    "fp16 mm": ("mm", "mm", torch.float16),
}
# the GEMMs kselect models, in fp32 (what the test ranker has data for)
MODELLED = {"mm": "mm", "addmm": "addmm", "bmm": "bmm", "baddbmm": "baddbmm"}


def every_kind(a, b, c, d, e, f, bias, ba, bb, bc, i8a, i8b, f8a, f8b, s1, s2, sa, sb, ga, gb, offs, x, w, ha, hb):
    """An op of every kind, each over its own inputs (a shared one could merge two GEMMs)."""
    return (
        a @ b + c @ d,  # one mm_plus_mm (Inductor's post-grad pattern)
        torch._int_mm(i8a, i8b),
        torch._scaled_mm(f8a, f8b, s1, s2, out_dtype=torch.bfloat16),  # tensorwise
        torch._scaled_mm(f8a, f8b, sa, sb, out_dtype=torch.bfloat16),  # rowwise
        torch._grouped_mm(ga, gb, offs),
        torch.nn.functional.conv2d(x, w),
        torch.mm(ha, hb),  # fp16: the ranker has no fp16 data
        torch.mm(e, f),
        torch.addmm(bias, a, f),
        torch.bmm(ba, bb),
        torch.baddbmm(bc, ba, bb),
    )


def _operands():
    g = torch.Generator().manual_seed(0)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    return (
        *(r(64, 96), r(96, 80), r(64, 96), r(96, 80), r(64, 96), r(96, 80), r(80)),  # a..f, bias
        *(r(4, 64, 96), r(4, 96, 80), r(4, 64, 80)),  # ba, bb, bc
        torch.randint(-8, 8, (64, 96), generator=g, dtype=torch.int8),
        torch.randint(-8, 8, (96, 80), generator=g, dtype=torch.int8),
        r(64, 96, dtype=F8),
        r(80, 96, dtype=F8).t(),  # _scaled_mm's B is column-major
        *(torch.tensor(0.5), torch.tensor(2.0), torch.full((64, 1), 0.5), torch.full((1, 80), 2.0)),
        r(64, 96, dtype=torch.bfloat16),
        r(4, 80, 96, dtype=torch.bfloat16).transpose(-2, -1),  # 3D B, K-major as _grouped_mm needs
        torch.tensor([16, 32, 48, 64], dtype=torch.int32),
        r(2, 8, 12, 12),
        r(16, 8, 3, 3),
        r(64, 96, dtype=torch.float16),
        r(96, 80, dtype=torch.float16),
    )


def reference_matmul(a, b, *, out):
    """Inductor's `external_matmul` choice: a second extern kernel for every mm."""
    return torch.mm(a, b, out=out)


class Fp32Ranker:
    """A ranker with fp32 data only (as the shipped model has bf16 only): ATen first."""

    log_time_scores = False
    ident = "fp32-only"
    dtypes = ("fp32",)

    def rank(self, problem, candidates):
        return np.array([0.0 if c.backend == "aten" else 1.0 for c in candidates])


class Run:
    """What Inductor did in one compile, read from its own hooks."""

    def __init__(self):
        self.lists: list = []  # (extern kernel name, first input dtype, choice names, kind read)
        self.ktc_spaces: list = []  # (op name, first input dtype, search space) per get_ktc
        self.benchmarked: list = []  # choice names of every real benchmark (2+ choices)
        self.outputs = ()
        self.info: list = []
        self.warnings: list = []
        self.stats: dict = {}

    def choices(self, extern: str, dtype) -> list:
        return [names for name, dt, names, _ in self.lists if name == extern and dt == dtype]

    def kinds(self, extern: str, dtype) -> set:
        return {kind for name, dt, _, kind in self.lists if name == extern and dt == dtype}

    def spaces(self, op_name: str, dtype) -> set:
        return {space for op, dt, space in self.ktc_spaces if op == op_name and dt == dtype}


def _stem(choice) -> str:
    return re.sub(r"_\d+$", "", str(choice.name))  # Inductor's per-compile counter off


def _extern_name(choices) -> str:
    return next((c.name for c in choices if type(c).__name__ == "ExternKernelCaller"), "")


def compile_twice(fn, args, tmp, ranker, **inductor_config) -> tuple:
    """(stock, kselect): `fn(*args)` compiled under max-autotune with `inductor_config` (the
    user's settings), once without kselect and once with it (predict mode, `ranker`), each a
    Run read from Inductor's own hooks; every output checked against eager (an int one exactly)."""
    with torch.no_grad():
        want = fn(*args)
    state = {"run": None}

    def record(choices):  # behind kselect's own preprocessing: what Inductor goes on with
        run = state["run"]
        if run is not None:
            dtype = choices[0].input_nodes[0].get_dtype()
            run.lists.append((_extern_name(choices), dtype, [_stem(c) for c in choices], naming.choices_kind(choices)))
        return choices

    def saver(timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        if state["run"] is not None and len(timings) > 1:
            state["run"].benchmarked.append(sorted(_stem(c) for c in timings))

    get_ktc = InductorChoices.get_ktc

    def spy_get_ktc(self, kernel_inputs, template, op_name, kwarg_overrides=None):
        from torch._inductor import config

        run = state["run"]
        if run is not None:
            dtype = kernel_inputs.nodes()[0].get_dtype()
            run.ktc_spaces.append((op_name, dtype, str(config.max_autotune_gemm_search_space).upper()))
        return get_ktc(self, kernel_inputs, template, op_name, kwarg_overrides)

    ksi.disable()
    ksi._ensure_preprocess()  # kselect's preprocessing runs before the recorder
    remove = autotune.add_preprocessing_fn(record)
    patch = pytest.MonkeyPatch()
    patch.setattr(InductorChoices, "get_ktc", spy_get_ktc)
    logger = logging.getLogger("kselect.selector")
    lines = _Lines()
    logger.addHandler(lines)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    out = []
    try:
        with inductor_sandbox(tmp, saver, **inductor_config):
            for on in (False, True):
                run = state["run"] = Run()
                lines.messages.clear()
                torch._dynamo.reset()
                sel = ksi.enable("predict", ranker=ranker) if on else None
                try:
                    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
                        warnings.simplefilter("always")
                        run.outputs = torch.compile(fn)(*args)
                finally:
                    ksi.disable()
                run.info = list(lines.messages)
                run.warnings = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
                run.stats = dict(sel.stats) if sel is not None else {}
                out.append(run)
    finally:
        state["run"] = None
        remove()
        patch.undo()
        logger.removeHandler(lines)
        logger.setLevel(old_level)
        torch._dynamo.reset()
    for run in out:
        for got, ref in zip(run.outputs, want, strict=True):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            if ref.is_floating_point():
                torch.testing.assert_close(got.float(), ref.float(), rtol=2e-2, atol=5e-2)
            else:
                assert torch.equal(got, ref)
    return tuple(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(stock, kselect) of every_kind on the CPU."""
    return compile_twice(
        every_kind,
        _operands(),
        tmp_path_factory.mktemp("inductor"),
        Fp32Ranker(),
        max_autotune_gemm_search_space="DEFAULT",
        max_autotune_gemm_backends="ATEN",
        external_matmul=[reference_matmul],
    )


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list = []

    def emit(self, record):
        self.messages.append((record.levelno, record.getMessage()))


def not_modelled_lines(run: Run) -> list:
    return [m for level, m in run.info if level == logging.INFO and m.endswith("is not modelled; stock autotuning")]


@pytest.mark.parametrize("kind", list(UNMODELLED))
def test_an_op_kselect_does_not_model_gets_exactly_the_stock_choices(runs, kind):
    """Each op kind is read from what Inductor lowers and gets stock Inductor's own choices,
    built in the user's DEFAULT space, with one INFO line and no warning.

    Catches: an op read from its input shapes (mm_plus_mm as an addmm, a grouped GEMM as a plain
    mm, an fp8 or int8 GEMM failing inside the selector with "unknown dtype"); its templates
    generated in the EXHAUSTIVE space kselect widened to (at any get_ktc call) or selected after;
    the dtype refusal coming only after the widened list was built; the line logged per GEMM,
    at WARNING, or not at all; a choice added or removed."""
    stock, ks = runs
    extern, op_name, dtype = UNMODELLED[kind]
    lists = ks.choices(extern, dtype)
    assert lists and lists == stock.choices(extern, dtype), (lists, stock.choices(extern, dtype))
    kind_read = kind.split()[-1]  # "fp16 mm": the op is an mm, its dtype is what is refused
    assert ks.kinds(extern, dtype) == {kind_read} == stock.kinds(extern, dtype)
    assert not_modelled_lines(ks).count(f"kselect: {kind} is not modelled; stock autotuning") == 1, ks.info
    if op_name is None:  # this lowering builds its choices itself: no template stage to gate
        assert not ks.spaces(kind_read, dtype) and not stock.spaces(kind_read, dtype)
    else:  # Inductor generated its templates in the user's space only, as stock did
        assert ks.spaces(op_name, dtype) == {"DEFAULT"} == stock.spaces(op_name, dtype)
    assert ks.warnings == [] and not any("selector failed" in m for _, m in ks.info), ks.warnings
    assert ks.stats["fallbacks"] == 0, ks.stats


def test_the_refused_fp16_mm_is_benchmarked_whole_as_stock_does(runs):
    """The fp16 mm has two choices (ATen + the external matmul): Inductor benchmarked both, as
    stock did. Catches: kselect pruning or ranking a GEMM of a dtype its ranker has no data for."""
    stock, ks = runs
    both = ["mm", "reference_matmul"]
    assert ks.choices("mm", torch.float16) == [both]
    assert both in ks.benchmarked and both in stock.benchmarked


def test_the_ops_kselect_models_are_decided_in_the_widened_space(runs):
    """The contrast: mm, addmm, bmm and baddbmm (fp32, which the ranker knows) are read as
    themselves, generated in kselect's EXHAUSTIVE space and decided as before; the fp32 mm
    (ATen + the external matmul) is ranked and left with one choice, so Inductor benchmarks
    nothing for it. Catches: the gate leaving a modelled op to stock (the spy reads DEFAULT;
    nothing decided), or naming it unmodelled."""
    stock, ks = runs
    for kind, extern in MODELLED.items():
        assert ks.kinds(extern, torch.float32) == {kind} == stock.kinds(extern, torch.float32), kind
        assert ks.spaces(kind, torch.float32) == {"EXHAUSTIVE"}, kind
        assert stock.spaces(kind, torch.float32) == {"DEFAULT"}, kind
    assert ks.choices("mm", torch.float32) == [["mm"]]  # ranked: ATen kept, the other pruned
    assert stock.choices("mm", torch.float32) == [["mm", "reference_matmul"]]
    assert ks.stats["decisions"] == 1 and ks.stats["fallbacks"] == 0, ks.stats
    assert sorted(not_modelled_lines(ks)) == sorted(
        f"kselect: {k} is not modelled; stock autotuning" for k in UNMODELLED
    )


# ---------------------------------------------------------------------------------------
# the templates stage of GPU lowerings, on real Inductor objects built on this CPU: operands
# laid out on a "cuda" device under a real GraphLowering (nothing touches a GPU until a choice
# is built; building a Triton choice needs Triton, so the spy below hands on the ATen ones)
def _cuda(name, size, dtype, transposed=False):
    stride = [1, size[0]] if transposed else [size[1], 1]
    return ir.InputBuffer(name=name, layout=ir.FixedLayout(torch.device("cuda"), dtype, size, stride))


class GpuCase(NamedTuple):
    op_name: str  # what the lowering names its templates stage
    inputs: Callable  # its input buffers, fresh
    templates: list  # the templates it passes
    logged: str | None  # the kind kselect logs as not modelled (None: kselect decides it)
    widens: bool  # whether Inductor's configs for it differ between DEFAULT and EXHAUSTIVE


def _gpu_cases() -> dict:
    from torch._inductor.kernel import mm as inductor_mm
    from torch._inductor.kernel.mm_plus_mm import aten_mm_plus_mm, mm_plus_mm_template

    aten_mm, tiles = inductor_mm.aten_mm, inductor_mm.mm_template
    h, i8, bf = torch.float16, torch.int8, torch.bfloat16

    def pair(dtype, m, n, k):
        return lambda: [_cuda("a", [m, k], dtype), _cuda("b", [k, n], dtype)]

    four = lambda: [_cuda(n, s, h) for n, s in (("a", [64, 96]), ("b", [96, 80]), ("c", [64, 96]), ("d", [96, 80]))]  # noqa: E731
    return {
        "fp16 mm": GpuCase("mm", pair(h, 64, 80, 96), [aten_mm, tiles], "fp16 mm", True),
        "int_mm": GpuCase("int_mm", pair(i8, 64, 80, 96), [inductor_mm.aten__int_mm, tiles], "int_mm", False),
        "mm_plus_mm": GpuCase("mm_plus_mm", four, [aten_mm_plus_mm, mm_plus_mm_template], "mm_plus_mm", False),
        "bf16 mm (decided)": GpuCase("mm", pair(bf, 64, 80, 96), [aten_mm, tiles], None, True),
    }


class Bf16Ranker(Fp32Ranker):
    """The shipped model's dtypes (bf16 only)."""

    ident = "bf16-only"
    dtypes = ("bf16",)


@pytest.fixture
def finalized(monkeypatch):
    """Every KTC list Inductor's own _finalize_template_configs returns, as candidate keys; the
    ATen KTCs go on (a Triton choice cannot be built without Triton)."""
    from torch._inductor.select_algorithm import ExternKernelChoice

    seen: list = []
    real = InductorChoices._finalize_template_configs

    def spy(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        ktcs = real(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        seen.append([choice_candidates.ktc_candidate(k).key for k in ktcs])
        return [k for k in ktcs if isinstance(k.template, ExternKernelChoice)]

    monkeypatch.setattr(InductorChoices, "_finalize_template_configs", spy)
    return seen


@pytest.mark.parametrize("case", list(_gpu_cases()))
def test_gpu_lowerings_left_to_stock_are_generated_in_the_users_space(case, finalized, caplog):
    """The gated handler, driven as Inductor's GPU lowerings drive it, the user's DEFAULT space
    in force and kselect widening to EXHAUSTIVE: an op it leaves to stock gets exactly the KTCs stock Inductor
    finalizes in the user's DEFAULT space, each choice stamped with its kind, nothing selected;
    a bf16 mm is selected over the EXHAUSTIVE space. Catches: Triton templates generated in
    EXHAUSTIVE for an unmodelled op (a longer list where Inductor's configs depend on the space:
    the mm family's; _int_mm's and mm_plus_mm's do not), an fp16 mm ranked or
    refused only after the widened list was built, the gate leaving a modelled bf16 mm to stock."""
    from test_early_decision import lowering

    op_name, inputs, templates, logged, widens = _gpu_cases()[case]
    with lowering("DEFAULT"):
        InductorChoices().get_template_configs(MMKernelInputs(inputs()), templates, op_name)
        in_default = finalized.pop()
    with lowering("EXHAUSTIVE"):
        InductorChoices().get_template_configs(MMKernelInputs(inputs()), templates, op_name)
        in_exhaustive = finalized.pop()
    assert len(in_default) > 1 and (len(in_exhaustive) > len(in_default)) is widens

    reset_warnings()  # as enable() does: each kind's line once per configuration
    sel = ksi.Selector("predict", ranker=Bf16Ranker())
    selected = []  # what reached kselect's selection

    def select(ktcs, kernel_inputs, op_name, restock=None):
        selected.append(op_name)
        return sel.select_ktcs(ktcs, kernel_inputs, op_name, restock=restock)

    handler = template_configs.make_selecting_choices(select, sel.uuid(), admit=sel.op_gate.admit, widen="EXHAUSTIVE")
    caplog.set_level(logging.INFO, logger="kselect.selector")
    with lowering("DEFAULT"), warnings.catch_warnings():
        warnings.simplefilter("error", KselectFallbackWarning)
        choices = handler.get_template_configs(MMKernelInputs(inputs()), list(templates), op_name)
    (got,) = finalized
    lines = [r.getMessage() for r in caplog.records if "is not modelled" in r.getMessage()]
    if logged is None:
        assert got == in_exhaustive and lines == [] and selected == [op_name]
    else:
        assert got == in_default, (len(got), len(in_default))
        assert lines == [f"kselect: {logged} is not modelled; stock autotuning"]
        assert selected == [] and sel.stats["fallbacks"] == 0, sel.stats
    kind = naming.lowering_kind(op_name)
    assert choices and {naming.choice_vote(c) for c in choices} == {kind}  # stamped


# ---------------------------------------------------------------------------------------
# units: how an op is named
def test_lowering_names_read_as_their_kind():
    """Inductor's op names at its templates stage (2.13, and the underscored spellings of the
    same lowerings). Catches: AutoHeuristic's "mm-ah" call read as another op, `_int_mm` /
    `_scaled_mm` spellings missed, an unknown op read as modelled."""
    got = {n: naming.lowering_kind(n) for n in ("mm", "mm-ah", "addmm", "bmm", "baddbmm", "_int_mm", "int_mm")}
    assert got == {"mm": "mm", "mm-ah": "mm", "addmm": "addmm", "bmm": "bmm", "baddbmm": "baddbmm"} | {
        "_int_mm": "int_mm",
        "int_mm": "int_mm",
    }
    for name, kind in [
        ("scaled_mm", "scaled_mm"),
        ("_scaled_mm", "scaled_mm"),
        ("aten._grouped_mm.default", "grouped_mm"),
    ]:
        assert naming.lowering_kind(name) == kind
    assert {naming.lowering_kind(n) for n in ("mm_plus_mm", "some_new_gemm")}.isdisjoint(registry.KINDS)


def _bound(extern, **kwargs):
    """A real ExternKernelCaller of `extern` (an ExternKernelChoice) over CPU buffers."""
    cpu = torch.device("cpu")

    def buf(name, size):
        return ir.InputBuffer(name=name, layout=ir.FixedLayout(cpu, torch.float32, size, [size[1], 1]))

    out = ir.FixedLayout(cpu, torch.float32, [64, 80], [80, 1])
    return extern.bind([buf("a", [64, 96]), buf("b", [96, 80])], out, **kwargs)


def test_choices_name_their_op_by_their_own_identity():
    """Real extern choices, as the preprocessing hook receives them. Catches: an op kind guessed
    from shapes (every list below has an mm's shapes); a user's `external_matmul` kernel (no op
    of its own) turning an mm unidentified, or identifying a list alone; two ops' choices in one
    list read as either of them; a stamp from the templates stage not winning over the extern's
    name."""
    import torch._inductor.lowering  # noqa: F401 -- registers Inductor's extern kernels
    from torch._inductor.kernel.mm import lazy_register_extern_choice
    from torch._inductor.select_algorithm import ExternKernelChoice

    def bound(name):
        extern = ExternKernelChoice.lookup(name)
        if extern is None:
            pytest.skip(f"this torch has no extern kernel {name}")
        return _bound(extern)

    user = _bound(lazy_register_extern_choice(reference_matmul))
    cases = [
        (["mm"], "mm"),
        (["_mkl_linear"], "linear"),  # a frozen Linear on the CPU (MKL, oneDNN)
        (["_linear_pointwise"], "linear"),
        (["addmm", "bias_addmm"], "addmm"),
        (["baddbmm"], "baddbmm"),
        (["_int_mm"], "int_mm"),
        (["_scaled_mm"], "scaled_mm"),
        (["_grouped_mm"], "grouped_mm"),
        (["_scaled_grouped_mm"], "scaled_grouped_mm"),
        (["_mm_plus_mm"], "mm_plus_mm"),
        (["convolution", "conv1x1_via_mm"], "conv"),
        (["_linear_pointwise.binary"], "linear+binary"),  # a residual add fused
        (["mm", "_int_mm"], "int_mm+mm"),
    ]
    for names, kind in cases:
        assert naming.choices_kind([bound(n) for n in names]) == kind, names
    relu = _bound(ExternKernelChoice.lookup("_linear_pointwise"), attr="relu", scalars=[], algorithm="")
    assert naming.choices_kind([relu]) == "linear+relu"  # its activation fused: not a bare GEMM
    assert naming.choices_kind([bound("mm"), user]) == "mm"
    assert naming.choices_kind([user]) == "unidentified op"
    stamped = choice_candidates.stamp([bound("mm"), user], "scaled_mm")  # built by the scaled_mm lowering
    assert naming.choices_kind(stamped) == "scaled_mm"


class TritonTemplateCaller:
    """Stands in for Inductor's class of that name (building a real one needs Triton): only its
    name, "triton_<template>_<counter>", is read."""

    def __init__(self, name: str):
        self.name = name


def test_triton_choices_built_outside_the_templates_stage_name_their_template():
    """Catches: the template shared by mm, addmm, _int_mm and _scaled_mm (triton_mm) naming an op;
    a grouped-GEMM, conv or flex-attention template read as a GEMM kselect models."""
    vote = naming.choice_vote
    assert vote(TritonTemplateCaller("triton_mm_12")) is None
    assert vote(TritonTemplateCaller("triton_mm_persistent_tma_3")) is None
    assert vote(TritonTemplateCaller("triton_grouped_mm_0")) == "grouped_mm"
    assert vote(TritonTemplateCaller("triton_convolution2d_7")) == "conv"
    assert vote(TritonTemplateCaller("triton_flex_attention_2")) == "flex_attention"
    assert naming.choices_kind([TritonTemplateCaller("triton_mm_1"), TritonTemplateCaller("triton_bmm_2")]) == (
        "unidentified op"
    )


def test_a_modelled_op_is_refused_only_for_a_dtype_its_ranker_lacks():
    """Catches: the ranker asked about an op kselect does not model; a dtype the ranker lacks, or
    no dtype kselect knows (int8), let through; a ranker without a `dtypes` list, or none at
    all for the device (the usual path reports that), refusing anything."""
    asked = []

    def ranker_dtypes(known):
        return lambda: asked.append(1) or known

    assert registry.get("int_mm") is None  # no module: the gate names it and asks nothing
    assert registry.KINDS["mm"].unheld_dtypes([torch.float16] * 2, ranker_dtypes(("bf16",))) == "fp16 mm"
    assert registry.KINDS["bmm"].unheld_dtypes([torch.bfloat16] * 2, ranker_dtypes(("bf16",))) is None
    assert registry.KINDS["mm"].unheld_dtypes([torch.int8] * 2, ranker_dtypes(None)) == "int8 mm"
    assert (
        registry.KINDS["addmm"].unheld_dtypes([torch.float32, torch.bfloat16], ranker_dtypes(None)) == "bf16/fp32 addmm"
    )
    assert registry.KINDS["mm"].unheld_dtypes([torch.float32], ranker_dtypes(None)) is None  # any dtype it knows
    assert registry.KINDS["mm"].unheld_dtypes([], ranker_dtypes(("bf16",))) is None  # nothing read: as before

    def no_ranker(device):
        raise RankerUnavailable("no-gpu", "no ranker for this device")

    gate = op_gate.OpGate(no_ranker)
    fp16 = MMKernelInputs([_cuda("a", [64, 96], torch.float16), _cuda("b", [96, 80], torch.float16)])
    assert gate.admit("mm", fp16) == ("mm", True)  # undecided here: the usual path warns, as before
    assert gate.admit("int_mm", fp16) == ("int_mm", False)


def test_the_gate_reads_sidecars_and_loads_no_model_for_an_op_it_leaves(monkeypatch):
    """Whether the model that would serve the card holds an fp8 scaled_mm or a grouped GEMM is
    read from the shipped sidecars alone (discovery.serving_holdings): no model is loaded or
    warmed for an op kselect leaves to stock, so it costs that op's compile nothing. Once a
    ranker is loaded for the card, the gate asks it. Catches: the gate loading (and warming) the
    card's cost model to answer, or reading the wrong model's holdings (the bf16 one holds mm,
    addmm, bmm; the fp16/TF32 one joins it)."""
    from kselect.selector.inductor import device_rankers
    from kselect.selector.model import cost_model
    from kselect.selector.model.artifact import read_sidecar
    from kselect.selector.model.checks import trained_fingerprints

    h100 = next(
        f
        for f in trained_fingerprints(read_sidecar("models/hopper-bf16.meta.json"))
        if "H100" in str(f.get("gpu_name"))
    )
    h100 = dict(h100, fingerprint_id="h100-test")
    monkeypatch.setattr(device_rankers, "device_fingerprint", lambda device: h100)
    loads = []
    real_load = cost_model.CostModel.load.__func__
    monkeypatch.setattr(
        cost_model.CostModel, "load", classmethod(lambda cls, *a, **k: loads.append(a) or real_load(cls, *a, **k))
    )

    reset_warnings()
    sel = ksi.Selector("verify", cache_dir=None)
    f8 = [_cuda("a", [64, 96], F8), _cuda("b", [96, 80], F8, transposed=True)]
    scales = [_cuda("sa", [64, 1], torch.float32), _cuda("sb", [1, 80], torch.float32)]
    held = sel.rankers.holdings(torch.device("cuda"))
    assert held.ops == {"mm", "addmm", "bmm"} and held.scalings == frozenset() and held.grouped is None
    assert set(held.dtypes) == {"bf16", "fp16", "tf32"}
    assert sel.op_gate.admit("scaled_mm", MMKernelInputs(f8 + scales)) == ("scaled_mm", False)
    assert sel.op_gate.admit(
        "mm", MMKernelInputs([_cuda("a", [64, 96], torch.bfloat16), _cuda("b", [96, 80], torch.bfloat16)])
    ) == ("mm", True)
    assert loads == [] and sel.rankers.loaded == {}  # nothing loaded to answer

    class Loaded:
        ops, scalings, dtypes = frozenset({"mm", "scaled_mm"}), frozenset({"rowwise"}), ("bf16", "fp8e4m3")

    sel.rankers.loaded["h100-test"] = Loaded()
    assert sel.op_gate.admit("scaled_mm", MMKernelInputs(f8 + scales)) == ("scaled_mm", True)


def test_an_op_the_gate_cannot_read_goes_to_stock_with_one_warning():
    """Any doubt goes to stock: a gate that fails reading the op (here the card's holdings raise
    an unexpected error) leaves it to Inductor at both stages, with one warning for the cause.
    Catches: a gate error read as "decided" (the op then ranked or selected on a failed read), a
    warning per GEMM, or an error escaping into the user's compile."""

    def broken(device):
        raise RuntimeError("sidecar read failed")

    reset_warnings()
    gate = op_gate.OpGate(broken)
    f8 = [_cuda("a", [64, 96], F8), _cuda("b", [96, 80], F8, transposed=True)]
    scales = [_cuda("sa", [64, 1], torch.float32), _cuda("sb", [1, 80], torch.float32)]

    class Choice:  # an extern _scaled_mm choice, as the choices stage sees one
        annotations = {choice_candidates.OP_STAMP: "scaled_mm"}
        input_nodes = f8 + scales

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert gate.admit("scaled_mm", MMKernelInputs(f8 + scales)) == ("scaled_mm", False)
        assert gate.admit("scaled_mm", MMKernelInputs(f8 + scales)) == ("scaled_mm", False)
        assert gate.leaves_choices([Choice(), Choice()]) is True
    mine = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert mine == ["kselect: cannot read the op being lowered (RuntimeError: sidecar read failed) -- stock autotuning"]
