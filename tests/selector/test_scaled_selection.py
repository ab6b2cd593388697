"""kselect decides an fp8 `_scaled_mm` where its ranker holds the op and its scaling kind, and
leaves every other one to stock Inductor (selector/ops/gate.py).

The scaled GEMM is Inductor's own: fp8 operands and fp32 scales laid out on a "cuda" device
under a real GraphLowering, whose scaled templates' KTCs Inductor's heuristics generate on this
CPU (ATen's `_scaled_mm` and the scaled `triton::mm`), handed to kselect's real selecting
handler behind the op gate. Building a Triton choice needs a GPU, so these tests stop at the
choices handed back (tests/kernels/test_gpu_scaled.py and tests/selector/test_gpu_scaled_verify.py
run them). The stock case also compiles two `_scaled_mm`s on this CPU, as
test_scaled_signature.py does, and reads the preprocessing hook's lists."""

from __future__ import annotations

import json
import logging
import shutil
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch._inductor import config as ic  # noqa: E402
from torch._inductor import ir  # noqa: E402
from torch._inductor.choices import InductorChoices  # noqa: E402
from torch._inductor.graph import GraphLowering  # noqa: E402
from torch._inductor.kernel.mm import aten__fp8_mm, mm_template  # noqa: E402
from torch._inductor.kernel_inputs import MMKernelInputs  # noqa: E402
from torch._inductor.virtualized import V  # noqa: E402

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.models import shipped_model_path  # noqa: E402
from kselect.selector.compat import choice_candidates, signatures, template_configs  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker, MeasuredRanker  # noqa: E402
from kselect.selector.inductor.hook import Selector  # noqa: E402
from kselect.selector.model.checks import FeatureSchemaError  # noqa: E402
from kselect.selector.model.cost_model import CostModel  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings  # noqa: E402

F8 = torch.float8_e4m3fn
M, N, K = 64, 128, 256
TEMPLATES = (aten__fp8_mm, mm_template)  # tuned_scaled_mm's list where TMA is out of reach
ROWWISE = Problem(M, N, K, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", out_dtype="bf16")
TENSORWISE = Problem(M, N, K, "fp8e4m3", "nt", "scaled_mm", scaling="tensorwise", out_dtype="bf16")


def scaled_inputs(scaling: str, a_dtype=F8) -> MMKernelInputs:
    """tuned_scaled_mm's MMKernelInputs: A (M, K) row-major in `a_dtype`, B (K, N) column-major,
    fp32 scales."""
    tag = scaling if a_dtype == F8 else f"{scaling}_{str(a_dtype).removeprefix('torch.')}"

    def buf(name, size, stride, dtype):  # a graph input, as the lowering's operands are
        box = ir.TensorBox.create(
            ir.InputBuffer(name=f"{name}_{tag}", layout=ir.FixedLayout(torch.device("cuda"), dtype, size, stride))
        )
        V.graph.graph_inputs[f"{name}_{tag}"] = box
        return box

    scales = ([M, 1], [1, 1], [1, N], [N, 1]) if scaling == "rowwise" else ([], [], [], [])
    return MMKernelInputs(
        [
            buf("a", [M, K], [K, 1], a_dtype),
            buf("b", [K, N], [1, K], F8),
            buf("sa", scales[0], scales[1], torch.float32),
            buf("sb", scales[2], scales[3], torch.float32),
        ],
        mat1_idx=0,
        mat2_idx=1,
        out_dtype=torch.bfloat16,
    )


OVERRIDES = {
    aten__fp8_mm.uid: {"out_dtype": torch.bfloat16, "use_fast_accum": False},
    mm_template.uid: {"USE_FAST_ACCUM": False},
}


@pytest.fixture(scope="module")
def lowered():
    """Inside a real GraphLowering: {scaling: (kernel inputs, Inductor's own KTCs)}."""
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with V.set_graph_handler(GraphLowering(gm)), ic.patch(max_autotune=True, max_autotune_gemm_search_space="DEFAULT"):
        stock = InductorChoices()
        out = {}
        for scaling in ("rowwise", "tensorwise"):
            ki = scaled_inputs(scaling)
            out[scaling] = (ki, [k for t in TEMPLATES for k in stock.get_ktc(ki, t, "scaled_mm", OVERRIDES[t.uid])])
        yield out


def decide(sel: Selector, ki, ktcs) -> list:
    """The selecting handler's templates stage over Inductor's KTCs: what it hands back."""
    handler = template_configs.make_selecting_choices(sel.select_ktcs, sel.uuid(), admit=sel.op_gate.admit)
    gens = {}
    for ktc in ktcs:
        gens.setdefault(ktc.template.uid, []).append(ktc)
    return handler._finalize_template_configs(
        {uid: iter(g) for uid, g in gens.items()}, ki, TEMPLATES, "scaled_mm", OVERRIDES
    )


def table_for(problem: Problem, ktcs, fastest: int) -> dict:
    """A measured table over the problem's candidates: every one 1 ms, `fastest` 0.5 ms."""
    cands = choice_candidates.scaled_ktc_candidates(ktcs)
    return {problem.key: {c.key: (0.5 if i == fastest else 1.0) for i, c in enumerate(cands)}}


def test_a_held_scaled_mm_keeps_the_tables_fastest_choice(lowered, caplog):
    ki, ktcs = lowered["rowwise"]
    cands = choice_candidates.scaled_ktc_candidates(ktcs)
    assert cands[0].key == "aten:scaled_mm" and {c.template for c in cands[1:]} == {"scaled_mm"}
    assert len(set(cands)) == len(cands) > 20  # every scaled tile its own candidate
    fastest = len(ktcs) // 2  # a Triton tile in the middle of Inductor's order
    reset_warnings()
    sel = Selector(mode="predict", ranker=MeasuredRanker(table_for(ROWWISE, ktcs, fastest)), cache_dir=None)
    with caplog.at_level(logging.INFO, logger="kselect"), ic.patch(max_autotune=True):
        assert sel.op_gate.admit("scaled_mm", ki)[1]  # the gate lets it through
        kept = decide(sel, ki, ktcs)
    assert kept == [ktcs[fastest]]
    assert sel.decisions[-1]["problem"] == ROWWISE.key and sel.stats["fallbacks"] == 0
    assert not [r for r in caplog.records if "not modelled" in r.getMessage()]


def test_c_a_tensorwise_ranker_leaves_rowwise_to_stock(lowered, caplog):
    ki_row, _ = lowered["rowwise"]
    ki_tens, ktcs = lowered["tensorwise"]
    reset_warnings()
    sel = Selector(mode="predict", ranker=MeasuredRanker(table_for(TENSORWISE, ktcs, 3)), cache_dir=None)
    assert sel.ranker.ops == {"scaled_mm"} and sel.ranker.scalings == {"tensorwise"}
    with caplog.at_level(logging.INFO, logger="kselect"), ic.patch(max_autotune=True):
        assert not sel.op_gate.admit("scaled_mm", ki_row)[1]  # the user's own space
        assert not sel.op_gate.admit("scaled_mm", ki_row)[1]
        assert sel.op_gate.admit("scaled_mm", ki_tens)[1]
        assert decide(sel, ki_tens, ktcs) == [ktcs[3]]
    lines = [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()]
    assert lines == ["kselect: rowwise scaled_mm is not modelled; stock autotuning"]


def test_c_an_e5m2_operand_goes_to_stock_whatever_the_ranker_holds(lowered, caplog):
    """torchao's tensorwise training casts the output gradient to e5m2: its backward GEMMs are
    e5m2 x e4m3 scaled_mm, which no kselect Problem describes. A ranker holding tensorwise
    scaled_mm (a measured table names no dtypes) leaves them to stock, said once, no failure."""
    _, ktcs = lowered["tensorwise"]
    reset_warnings()
    sel = Selector(mode="predict", ranker=MeasuredRanker(table_for(TENSORWISE, ktcs, 3)), cache_dir=None)
    with caplog.at_level(logging.INFO, logger="kselect"), ic.patch(max_autotune=True):
        assert not sel.op_gate.admit("scaled_mm", scaled_inputs("tensorwise", torch.float8_e5m2))[1]
    lines = [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()]
    assert lines == ["kselect: float8_e5m2/fp8e4m3 scaled_mm is not modelled; stock autotuning"]
    assert sel.stats["fallbacks"] == 0


def shipped_sidecar(tmp_path, **changes):
    """The shipped H200 model copied, its sidecar changed by `changes`; returns its path."""
    src = shipped_model_path("h200-bf16.json")
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    meta_src = src.with_name(src.stem + ".meta.json")
    meta = json.loads(meta_src.read_text())
    meta.update(changes)
    dst.with_name(dst.stem + ".meta.json").write_text(json.dumps(meta))
    return dst


def test_d_a_model_claiming_scaled_mm_without_its_columns_is_refused(lowered, tmp_path, caplog):
    broken = shipped_sidecar(tmp_path, ops=["mm", "addmm", "bmm", "scaled_mm"], dtypes=["bf16", "fp8e4m3"])
    with pytest.raises(FeatureSchemaError, match="claims scaled_mm but has no 'scaled_mm' feature block"):
        CostModel.load(broken)
    ki, _ktcs = lowered["rowwise"]
    reset_warnings()
    sel = Selector(mode="predict", model=str(broken), cache_dir=None)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, logger="kselect"):
        warnings.simplefilter("always")
        assert not sel.op_gate.admit("scaled_mm", ki)[1]
        assert not sel.op_gate.admit("scaled_mm", ki)[1]
    refused = [w for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(refused) == 1 and "feature block" in str(refused[0].message)


def _dataset_rows() -> list[dict]:
    """bf16 mm rows and fp8 scaled_mm rows of both scaling kinds, as the collector writes them."""
    from kselect.training.data.dataset import COLUMNS
    from kselect.training.data.synthetic import FINGERPRINT

    tiles = [
        (
            "triton",
            "scaled_mm" if scaled else "mm",
            dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4),
        )
        for scaled in (False, True)
        for bm, bn in ((64, 64), (64, 128), (128, 128))
    ]
    rows = []
    for m, n in ((16, 4096), (64, 4096), (256, 8192), (1024, 8192)):
        for p in (
            Problem(m, n, 4096, "bf16", "nt"),
            Problem(m, n, 4096, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", out_dtype="bf16"),
            Problem(m, n, 4096, "fp8e4m3", "nt", "scaled_mm", scaling="tensorwise", out_dtype="bf16"),
        ):
            mine = [("aten", p.op, {})] + [t for t in tiles if (t[1] == "scaled_mm") == (p.op == "scaled_mm")]
            for i, (backend, template, knobs) in enumerate(mine):
                c = Candidate.make(backend, template, **knobs)
                rows.append(
                    {
                        **{f: getattr(p, f) for f in ("op", "M", "N", "K", "batch", "dtype", "layout")},
                        **{f: getattr(p, f) for f in ("out_dtype", "scaling", "fast_accum")},
                        "problem_key": p.key,
                        "model": "llama3-8b",
                        "candidate_key": c.key,
                        "backend": backend,
                        "template": template,
                        "params": json.dumps(knobs, sort_keys=True),
                        **{k: knobs.get(k, 0) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
                        **{k: knobs.get(k, 0) for k in ("num_stages", "num_warps", "k_split")},
                        "status": "ok",
                        "time_ms": (1.0 + 0.1 * i) * m / 16 * (0.5 if p.op == "scaled_mm" else 1.0),
                        "fingerprint_id": FINGERPRINT["fingerprint_id"],
                        "oracle": False,
                        "noisy": False,
                    }
                )
    return [{c: row.get(c) for c in COLUMNS} for row in rows]


@pytest.fixture(scope="module")
def scaled_model(tmp_path_factory):
    """A model made by `kselect train --feature-block scaled_mm` (the one training path) from a
    dataset of bf16 and fp8 rows: its card says it holds scaled_mm, in both scaling kinds."""
    pytest.importorskip("xgboost")
    from kselect.training.cli.main import main
    from kselect.training.data.dataset import DatasetDir
    from kselect.training.data.synthetic import FINGERPRINT

    data = tmp_path_factory.mktemp("fp8-data")
    DatasetDir(data).append(_dataset_rows(), "rows")
    DatasetDir(data).write_fingerprint(FINGERPRINT)
    out = tmp_path_factory.mktemp("fp8-model") / "fp8"
    flags = ["--objective", "rank:pairwise", "--cv-folds", "0", "--grid", "single", "--nthread", "1"]
    assert main(["-q", "train", "--data", str(data), "--out", str(out), "--feature-block", "scaled_mm", *flags]) == 0
    return out.with_suffix(".json")


def test_a_model_trained_with_the_scaled_block_holds_scaled_mm_and_decides_it(scaled_model, lowered):
    """The card's ops and scalings read back; the scaled columns reach the trees; the gate lets
    a rowwise scaled_mm through and the pipeline keeps Inductor's own choices of it."""
    from kselect.selector.model.features import FEATURE_NAMES
    from kselect.selector.model.scaled_features import SCALED_MM_FEATURE_NAMES

    meta = json.loads(scaled_model.with_name(scaled_model.stem + ".meta.json").read_text())
    assert meta["training"]["ops"] == ["addmm", "bmm", "mm", "scaled_mm"]
    assert meta["training"]["scalings"] == ["rowwise", "tensorwise"]
    model = CostModel.load(scaled_model)
    ranker = CostModelRanker(model, model.fingerprint)
    assert "scaled_mm" in ranker.ops and ranker.scalings == {"rowwise", "tensorwise"}
    seen = []
    trees = model._margin

    def margin(X, iteration_range=None):  # what the trees are given
        seen.append(np.array(X))
        return trees(X, iteration_range)

    model._margin = margin
    ki, ktcs = lowered["rowwise"]
    reset_warnings()
    sel = Selector(mode="predict", ranker=ranker, cache_dir=None)
    with ic.patch(max_autotune=True):
        assert sel.op_gate.admit("scaled_mm", ki)[1]
        kept = decide(sel, ki, ktcs)
    assert len(kept) == 1 and kept[0] in ktcs and sel.stats["fallbacks"] == 0
    assert sel.decisions[-1]["problem"] == ROWWISE.key
    assert seen and all(X.shape[1] == len(FEATURE_NAMES) + len(SCALED_MM_FEATURE_NAMES) for X in seen)
    # the graph warm-up's bf16 stand-ins read zeros and two-byte outputs; the decision, rowwise
    # scales and a bf16 output, every row alike
    blocks = {tuple(row) for X in seen for row in X[:, len(FEATURE_NAMES) :].tolist()}
    assert blocks == {(0.0, 2.0, 0.0), (1.0, 2.0, 0.0)}


def test_doctor_names_the_scaled_mm_the_model_holds(scaled_model):
    """`kselect doctor` on the model's card says it decides scaled_mm with both scaling kinds; a
    model without scaled_mm (the shipped one) is told apart in test_doctor.py."""
    from kselect.selector import doctor
    from kselect.training.data.synthetic import FINGERPRINT

    path, why, ranker = doctor._model(dict(FINGERPRINT, architecture="sm_90"), scaled_model)
    assert path == str(scaled_model) and "KSELECT_MODEL" in why
    assert "scaled_mm (rowwise, tensorwise)" in doctor.decided(ranker)["ops"]


def two_scaled_mms(a, b, sa, sb, s1, s2):
    return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16), torch._scaled_mm(
        a, b, s1, s2, out_dtype=torch.bfloat16
    )


def test_b_the_shipped_model_leaves_scaled_mm_to_stock(tmp_path, caplog):
    from kselect.selector.compat import autotune
    from kselect.selector.inductor import lifecycle as ksi

    from inductor_sandbox import inductor_sandbox

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(48, 64, generator=g).to(F8), torch.randn(80, 64, generator=g).to(F8).t()
    args = (a, b, torch.rand(48, 1, generator=g) + 0.5, torch.rand(1, 80, generator=g) + 0.5)
    args += (torch.tensor(0.5), torch.tensor(2.0))
    model = CostModel.load(shipped_model_path("h200-bf16.json"))
    lists, read = [], []

    def record(choices):  # after kselect's own preprocessing: what it handed on, read as kselect reads it
        lists[-1].append([c.name for c in choices])
        problem = signatures.choices_scaled_signature(choices, choice_candidates.scaled_fast_accum(choices))[0]
        read.append((problem.scaling, [choice_candidates.caller_candidate(c).key for c in choices]))
        return choices

    def compiled(**kselect):
        lists.append([])
        remove = autotune.add_preprocessing_fn(record)
        try:
            with inductor_sandbox(tmp_path, lambda *a: None):
                if kselect:
                    ksi.enable(**kselect)
                torch._dynamo.reset()
                return torch.compile(two_scaled_mms)(*args)
        finally:
            remove()

    stock = compiled()
    with caplog.at_level(logging.INFO, logger="kselect"):
        ours = compiled(mode="predict", ranker=CostModelRanker(model, model.fingerprint), cache_dir=None)
    assert lists[1] == lists[0] and len(lists[0]) == 2  # both GEMMs, exactly stock's choices
    assert sorted(read[2:]) == [("rowwise", ["aten:scaled_mm"]), ("tensorwise", ["aten:scaled_mm"])]
    for got, want in zip(ours, stock):
        torch.testing.assert_close(got, want)
    lines = [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()]
    assert lines == ["kselect: scaled_mm is not modelled; stock autotuning"]


def test_training_rows_get_the_scaled_columns_the_selector_computes():
    """The scaled_mm block of dataset rows (training/learn/pooled.py) equals, row by row, what the
    ranker appends for the row's Problem (scaled_features.scaled_mm_problem_features)."""
    pd = pytest.importorskip("pandas")
    from kselect.selector.model.scaled_features import scaled_mm_problem_features
    from kselect.training.data.synthetic import FINGERPRINT
    from kselect.training.learn.pooled import featurize_rows

    rows = pd.DataFrame(_dataset_rows())
    rows.loc[rows.index[-1], "fast_accum"] = True  # a fast-accum row among them
    block = featurize_rows(rows, FINGERPRINT, ("scaled_mm",))[:, -3:]
    fields = ("M", "N", "K", "dtype", "layout", "op", "batch")
    want = [
        scaled_mm_problem_features(
            Problem(*(r[f] for f in fields), out_dtype=r["out_dtype"], scaling=r["scaling"], fast_accum=r["fast_accum"])
        )
        for r in rows.to_dict("records")
    ]
    assert np.array_equal(block, np.array(want, dtype=np.float32))
    assert set(map(tuple, block.tolist())) == {(0.0, 2.0, 0.0), (1.0, 2.0, 0.0), (0.0, 2.0, 1.0)}


def test_the_filtering_handler_reads_a_scaled_mms_templates_as_the_scaled_ones(lowered):
    """The handler `kselect faithfulness` pins one candidate with, over Inductor's own scaled
    KTCs. Catches: a scaled tile read as a bf16 mm's (triton:mm, the uid they share), so the pin
    keeps nothing and the compile falls to ATen, or the record names the wrong template."""
    ki, ktcs = lowered["rowwise"]
    scaled = choice_candidates.scaled_ktc_candidates(ktcs)
    want = scaled[3]
    assert want.template == "scaled_mm"
    record: list = []
    handler = template_configs.make_filtering_choices(lambda c: c.key == want.key, record)
    gens: dict = {}
    for ktc in ktcs:
        gens.setdefault(ktc.template.uid, []).append(ktc)
    kept = handler._finalize_template_configs(
        {uid: iter(g) for uid, g in gens.items()}, ki, TEMPLATES, "scaled_mm", OVERRIDES
    )
    assert kept == [ktcs[3]]
    assert record == [("scaled_mm", c) for c in scaled]
