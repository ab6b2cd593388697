"""kselect decides a `_grouped_mm` where its serving ranker holds a grouped model, and leaves it to
stock otherwise (selector/ops/gate.py, selector/decide/grouped_ranker.py).

The choices are Inductor's own: the real `tuned_grouped_mm` under a GraphLowering, its operands
on a "cuda" device, building ATen's `_grouped_mm` extern and every Triton `grouped_mm` config it
keeps. This CPU has no CUDA, so the card's properties (an H100's SM count, shared memory and
compute capability) and Triton's backend hash are supplied; everything else -- the prune, the
template's rendering, the ChoiceCallers -- is Inductor's. The GPU test
(test_gpu_grouped_selection.py) compiles and runs the decision.

The grouped model is trained by the real training path (`kselect grouped-eval --out`) on a
FIXTURE dataset written here: rows in the collector's schema whose times follow a made-up rule
(a small-row, BLOCK_N 128 tile fastest, ATen slower), never measured and never shipped.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from torch._inductor import config as ic  # noqa: E402
from torch._inductor import ir  # noqa: E402
from torch._inductor.graph import GraphLowering  # noqa: E402
from torch._inductor.kernel import mm_grouped  # noqa: E402
from torch._inductor.virtualized import V  # noqa: E402

from kselect.kernels.grouped.problem import GroupedProblem  # noqa: E402
from kselect.kernels.grouped.space import ATEN, H100_SMEM_OPTIN, grouped_space  # noqa: E402
from kselect.models import shipped_model_path  # noqa: E402
from kselect.selector.compat import choice_candidates  # noqa: E402
from kselect.selector.decide.grouped_ranker import grouped_beside, load_grouped_ranker  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker  # noqa: E402
from kselect.selector.inductor.hook import Selector  # noqa: E402
from kselect.selector.model.cost_model import CostModel  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings  # noqa: E402

G, ROWS, N, K = 4, 64, 128, 256
PROBLEM = GroupedProblem(G, ROWS, N, K, "bf16", "nt", "2d3d")
H100 = SimpleNamespace(
    name="NVIDIA H100 80GB HBM3",
    multi_processor_count=132,
    major=9,
    minor=0,
    regs_per_multiprocessor=65536,
    max_threads_per_multi_processor=2048,
    warp_size=32,
    total_memory=80 * 2**30,
    shared_memory_per_block_optin=H100_SMEM_OPTIN,
)


@contextlib.contextmanager
def an_h100_for_inductor():
    """What Inductor asks of the card while building grouped-mm choices, answered as an H100."""
    from torch._dynamo.device_interface import CudaInterface
    from torch._inductor.runtime.hints import DeviceProperties

    with contextlib.ExitStack() as stack:
        for owner, name, value in (
            (mm_grouped, "use_triton_template", lambda *a, **k: True),  # checks the device is a CUDA GPU
            (mm_grouped, "can_use_triton_kernel", lambda *a: True),  # checks sm_90+
            (mm_grouped, "get_num_sms", lambda: H100.multi_processor_count),
            (mm_grouped, "get_gpu_shared_memory", lambda: H100_SMEM_OPTIN),
            (torch.cuda, "get_device_capability", lambda *a: (H100.major, H100.minor)),
            (torch.cuda, "get_device_properties", lambda *a: H100),
            (CudaInterface, "get_device_properties", staticmethod(lambda *a: H100)),
            (CudaInterface, "get_compute_capability", staticmethod(lambda *a: 90)),
            (torch.utils._triton, "triton_hash_with_backend", lambda: "0" * 64),  # no driver to ask
        ):
            if hasattr(owner, name):  # a release without one never asks it
                stack.enter_context(mock.patch.object(owner, name, value))
        try:
            yield
        finally:
            DeviceProperties.create.cache_clear()  # it memoised the H100 for "cuda"


@pytest.fixture(scope="module")
def choices():
    """The choices Inductor's grouped-mm lowering hands its autotuner for PROBLEM (MoE form:
    A (rows, K), B (G, N, K) transposed, int32 offsets)."""
    handed = []

    def autotune(name, built, *args, **kwargs):
        handed.append(list(built))
        raise _Stop

    def node(name, size, stride, dtype):
        layout = ir.FixedLayout(torch.device("cuda"), dtype, size, stride)
        V.graph.graph_inputs[name] = box = ir.TensorBox.create(ir.InputBuffer(name=name, layout=layout))
        return box

    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with V.set_graph_handler(GraphLowering(gm)), ic.patch(max_autotune=True), an_h100_for_inductor():
        a = node("a", [ROWS, K], [K, 1], torch.bfloat16)
        b = node("b", [G, K, N], [N * K, 1, K], torch.bfloat16)
        offs = node("offs", [G], [1], torch.int32)
        with mock.patch.object(mm_grouped, "autotune_select_algorithm", autotune), pytest.raises(_Stop):
            mm_grouped.tuned_grouped_mm(a, b, offs=offs)
    return handed[0]


class _Stop(Exception):
    """Raised where Inductor would autotune: the choices are what these tests need."""


def fixture_time(problem: GroupedProblem, cand) -> float:
    """The fixture's made-up rule (no measurement): ATen 1 ms per 64 rows; a Triton config faster
    the closer its BLOCK_M to the rows per group, with BLOCK_N 128, BLOCK_K 64, 3 stages, 4 warps."""
    scale = max(problem.M, 64) / 64
    if cand.backend == "aten":
        return scale
    m_avg = problem.M // problem.G
    best_bm = 16 if m_avg <= 16 else 32 if m_avg <= 64 else 64
    k = cand.kwargs
    slower = 0.15 * abs(np.log2(k["BLOCK_M"] / best_bm)) + 0.1 * (k["BLOCK_N"] != 128) + 0.05 * (k["BLOCK_K"] != 64)
    return scale * (0.55 + slower + 0.03 * (k["num_warps"] == 8) + 0.02 * (k["num_stages"] == 4))


def train_fixture_model(directory: Path, fingerprint: dict) -> Path:
    """A grouped model made by `kselect grouped-eval --out` from the fixture dataset, written
    under `directory` for the card `fingerprint`; returns the model file."""
    from kselect.training.cli.main import main
    from kselect.training.data.dataset import COLUMNS, DatasetDir
    from kselect.training.data.rows import row_for

    rows = []
    for groups in (4, 8):
        for rows_total in (32, 64, 256, 1024):
            for n in (128, 256):
                for routing in ("uniform", "zipf1.2"):
                    p = GroupedProblem(groups, rows_total, n, K, "bf16", "nt", "2d3d", routing, seed=0)
                    for c in grouped_space(p, fingerprint.get("shared_memory_per_block_optin") or H100_SMEM_OPTIN):
                        rows.append(row_for(p, c, time_ms=fixture_time(p, c), spread=0.01, space="grouped"))
    data, out = directory / "fixture-data", directory / "fixture-grouped"
    DatasetDir(data).append([{c: r.get(c) for c in COLUMNS} for r in rows], "fixture")
    DatasetDir(data).write_fingerprint(fingerprint)
    argv = ["-q", "grouped-eval", "--train", str(data), "--unseen", str(data), "--out", str(out), "--trees", "40"]
    assert main(argv) == 0
    return out.with_suffix(".json")


@pytest.fixture(scope="module")
def grouped_model(tmp_path_factory):
    pytest.importorskip("xgboost")
    from kselect.training.data.synthetic import FINGERPRINT

    return train_fixture_model(tmp_path_factory.mktemp("grouped"), FINGERPRINT)


@pytest.fixture(scope="module")
def bf16_model():
    return CostModel.load(shipped_model_path("h200-bf16.json"))


def ranker_with(bf16_model, grouped_model):
    from kselect.training.data.synthetic import FINGERPRINT

    return CostModelRanker(bf16_model, FINGERPRINT, grouped=load_grouped_ranker(grouped_model))


def test_each_choice_maps_to_its_grouped_candidate_in_inductors_order(choices):
    from kselect.selector.compat.signatures import choices_grouped_signature

    assert choices_grouped_signature(choices)[0] == PROBLEM
    assert choice_candidates.grouped_caller_candidates(choices) == grouped_space(PROBLEM, H100_SMEM_OPTIN)
    # what verify's feedback reads back (record_verified) is the same mapping
    assert [choice_candidates.caller_candidate(c) for c in choices] == grouped_space(PROBLEM, H100_SMEM_OPTIN)


def test_the_model_card_says_it_holds_grouped_mm(grouped_model):
    from kselect.selector.model.grouped_features import GROUPED_FEATURE_SCHEMA_VERSION

    meta = json.loads(grouped_model.with_name(grouped_model.stem + ".meta.json").read_text())
    assert meta["kind"] == "grouped-cost-model" and meta["ops"] == ["grouped_mm"]
    assert meta["grouped_feature_schema_version"] == GROUPED_FEATURE_SCHEMA_VERSION and meta["dtypes"] == ["bf16"]
    assert "grouped-eval" in meta["command"] and grouped_model.with_suffix(".md").is_file()
    # served by the numpy trees, which predict as xgboost does on the saved file
    import xgboost as xgb

    from kselect.selector.model.grouped_features import featurize_grouped
    from kselect.selector.model.grouped_model import GroupedCostModel

    X = featurize_grouped(PROBLEM, grouped_space(PROBLEM), meta["fingerprint"]).astype(np.float32)
    served = GroupedCostModel.load(grouped_model).predict(X)
    np.testing.assert_allclose(served, xgb.Booster(model_file=str(grouped_model)).inplace_predict(X), rtol=1e-6)


def test_predict_picks_the_models_top_choice(choices, grouped_model, bf16_model, tmp_path):
    ranker = ranker_with(bf16_model, grouped_model)
    assert "grouped_mm" in ranker.ops
    cands = grouped_space(PROBLEM, H100_SMEM_OPTIN)
    scores = ranker.grouped.rank(PROBLEM, cands)
    best = int(np.nanargmin(scores))
    assert cands[best] != ATEN and scores[best] < -0.2  # the fixture's templates beat ATen clearly
    reset_warnings()
    sel = Selector(mode="predict", ranker=ranker, cache_dir=str(tmp_path))
    kept = sel.select_choices(choices)
    assert kept == [choices[best]] and sel.stats["fallbacks"] == 0
    assert sel.decisions[-1]["problem"] == PROBLEM.key
    assert sel.select_choices(choices) == [choices[best]] and sel.stats["cache_hits"] == 1  # cached, grouped key


def test_verify_hands_inductor_the_models_few_and_aten(choices, grouped_model, bf16_model):
    ranker = ranker_with(bf16_model, grouped_model)
    cands = grouped_space(PROBLEM, H100_SMEM_OPTIN)
    best = int(np.nanargmin(ranker.grouped.rank(PROBLEM, cands)))
    sel = Selector(mode="verify", ranker=ranker, cache_dir=None)
    kept = sel.select_choices(choices)
    assert 2 <= len(kept) < len(choices) and kept[0] is choices[best] and choices[0] in kept  # choices[0]: ATen
    assert all(any(k is c for c in choices) for k in kept) and sel.stats["fallbacks"] == 0
    assert not sel.measurements  # kselect's harness measured nothing: Inductor's benchmark times them


def test_a_ranker_without_a_grouped_model_leaves_it_to_stock(choices, bf16_model, caplog):
    from kselect.training.data.synthetic import FINGERPRINT

    reset_warnings()
    sel = Selector(mode="predict", ranker=CostModelRanker(bf16_model, FINGERPRINT), cache_dir=None)
    with caplog.at_level(logging.INFO, logger="kselect"):
        assert sel.select_choices(choices) is choices and sel.select_choices(choices) is choices
    assert [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()] == [
        "kselect: grouped_mm is not modelled; stock autotuning"
    ]
    assert sel.stats["decisions"] == 0


def test_a_stale_grouped_model_beside_the_named_model_goes_to_stock_with_one_warning(
    choices, grouped_model, bf16_model, tmp_path
):
    """Discovery beside the named cost model finds the grouped model of this card; a grouped
    feature schema of another version is refused by name, and grouped GEMMs go to stock."""
    from kselect.training.data.synthetic import FINGERPRINT

    shutil.copy(grouped_model, tmp_path / grouped_model.name)
    meta = json.loads(grouped_model.with_name(grouped_model.stem + ".meta.json").read_text())
    good = grouped_beside(FINGERPRINT, grouped_model)  # the model's own folder
    assert good is not None and good.ops == {"grouped_mm"}
    (tmp_path / (grouped_model.stem + ".meta.json")).write_text(
        json.dumps({**meta, "grouped_feature_schema_version": 0})
    )
    reset_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stale = grouped_beside(FINGERPRINT, tmp_path / "h100-bf16.json")
        sel = Selector(mode="predict", ranker=CostModelRanker(bf16_model, FINGERPRINT, grouped=stale), cache_dir=None)
        assert stale is None and sel.select_choices(choices) is choices
    refused = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(refused) == 1 and "grouped feature schema v0" in refused[0] and "stock" in refused[0]


def test_a_choice_that_maps_to_no_candidate_sends_the_gemm_to_stock(choices, grouped_model, bf16_model):
    odd = copy.copy(choices[7])
    odd.description = "BLOCK_M=16"  # its other knobs unreadable
    broken = [*choices[:7], odd, *choices[8:]]
    reset_warnings()
    sel = Selector(mode="predict", ranker=ranker_with(bf16_model, grouped_model), cache_dir=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sel.select_choices(broken) is broken
    assert len([w for w in caught if issubclass(w.category, KselectFallbackWarning)]) == 1
    assert sel.stats["fallbacks"] == 1


def test_doctor_names_grouped_mm_where_a_grouped_model_is_beside(grouped_model, bf16_model):
    from kselect.selector import doctor

    ranker = ranker_with(bf16_model, grouped_model)
    assert "grouped_mm" in doctor.decided(ranker)["ops"]
    assert "grouped_mm" not in doctor.decided(CostModelRanker(bf16_model, None))["ops"]
