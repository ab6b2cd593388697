"""A cost model with the epilogue feature block, end to end on the CPU: trained by `kselect
train --feature-block epilogue` from a dataset's bare rows plus its epilogue_labels.jsonl rows, its sidecar declaring the
block, ranked with the GEMM's Epilogue by CostModelRanker and the decision pipeline; a sidecar
declaring a block this code does not compute sends the GEMM to stock with one warning; and the
shipped models, which declare none, see exactly the features they always saw."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("xgboost")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.epilogue import NO_EPILOGUE, Epilogue  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker, RankerUnavailable  # noqa: E402
from kselect.selector.inductor import hook as ksi  # noqa: E402
from kselect.selector.model import feature_blocks as B  # noqa: E402
from kselect.selector.model import features as F  # noqa: E402
from kselect.selector.model.checks import FeatureSchemaError  # noqa: E402
from kselect.selector.model.cost_model import CostModel, meta_path  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings  # noqa: E402
from kselect.training.cli.main import main  # noqa: E402
from kselect.training.data.dataset import COLUMNS, DatasetDir  # noqa: E402
from kselect.training.data.epilogue_rows import (  # noqa: E402
    EpilogueLabelsError,
    append_records,
    epilogue_columns,
    with_label_rows,
)
from kselect.training.data.synthetic import FINGERPRINT  # noqa: E402
from kselect.training.learn.pooled import featurize_rows, pool  # noqa: E402

ATEN = Candidate.make("aten", "mm")
DK = Candidate.make("triton", "decompose_k", k_split=4)
TILES = [
    Candidate.make("triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
    for bm, bn in ((64, 64), (128, 64), (128, 128))
]
CANDIDATES = [ATEN, DK, *TILES]
# bare: ATen ahead; with a fusable epilogue ATen pays its separate kernel, the fusing tiles do not
BARE_MS = {ATEN.key: 1.0, DK.key: 1.6, **{c.key: 1.2 + 0.1 * i for i, c in enumerate(TILES)}}
EPILOGUE_MS = {**BARE_MS, ATEN.key: 2.0, DK.key: 2.6}
SHAPES = [(m, n, 4096) for m in (16, 64, 256, 1024) for n in (4096, 14336)]


def gelu_bias(m: int, n: int) -> Epilogue:
    """A bias + GELU after an M x N bf16 GEMM, as compat/current_graph.py describes one."""
    out = m * n * 2
    return Epilogue(
        ops=("add", "mul", "erf", "add", "mul", "mul"),
        kinds=(("activation", 1), ("add_tensor", 1), ("arith", 4)),
        extra_inputs=1,
        extra_bytes=n * 2,
        out_bytes=out,
        gemm_out_bytes=out,
        fusable=True,
    )


def _bare_rows() -> list[dict]:
    rows = []
    for m, n, k in SHAPES:
        p = Problem(m, n, k, "bf16", "nt")
        for c in CANDIDATES:
            knobs = c.kwargs
            rows.append(
                {
                    **{f: getattr(p, f) for f in ("op", "M", "N", "K", "batch", "dtype", "layout")},
                    "problem_key": p.key,
                    "model": "llama3-8b",
                    "candidate_key": c.key,
                    "backend": c.backend,
                    "template": c.template,
                    "params": json.dumps(knobs, sort_keys=True),
                    **{kn: knobs.get(kn, 0) for kn in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
                    **{kn: knobs.get(kn, 0) for kn in ("num_stages", "num_warps", "k_split")},
                    "status": "ok",
                    "time_ms": BARE_MS[c.key] * m / 16,
                    "fingerprint_id": FINGERPRINT["fingerprint_id"],
                    **{flag: False for flag in ("oracle", "noisy", "fast_accum")},
                }
            )
    return [{c: row.get(c) for c in COLUMNS} for row in rows]


def _label_records() -> list[dict]:
    """What time_pinned's records become on disk (training/data/epilogue_rows.record_of)."""
    return [
        {
            "case": f"gelu-bias-{m}x{n}",
            "problem": Problem(m, n, k, "bf16", "nt", model="llama3-8b").to_dict(),
            "candidate": {"backend": c.backend, "template": c.template, "params": c.kwargs},
            "ms": EPILOGUE_MS[c.key] * m / 16,
            "kernels": 1 if c.backend == "triton" else 2,
            "fused": None,
            "epilogue": gelu_bias(m, n).as_dict(),
            "error": "",
        }
        for m, n, k in SHAPES
        for c in CANDIDATES
    ]


@pytest.fixture(scope="module")
def block_data(tmp_path_factory):
    """A dataset directory of bare rows and its epilogue_labels.jsonl."""
    data = tmp_path_factory.mktemp("epi-data")
    DatasetDir(data).append(_bare_rows(), "bare")
    DatasetDir(data).write_fingerprint(FINGERPRINT)
    append_records(data, _label_records())
    return data


@pytest.fixture(scope="module")
def block_model(block_data, tmp_path_factory):
    """A model trained with the epilogue block by `kselect train --feature-block epilogue` (the
    one training path) on block_data."""
    data = block_data
    out = tmp_path_factory.mktemp("epi-model") / "epi"
    flags = ["--objective", "rank:pairwise", "--cv-folds", "0", "--grid", "single", "--nthread", "1"]
    assert main(["-q", "train", "--data", str(data), "--out", str(out), "--feature-block", "epilogue", *flags]) == 0
    card = json.loads(meta_path(out.with_suffix(".json")).read_text())["training"]
    assert card["feature_blocks"] == ["epilogue"] and card["epilogue_shapes"] == len(SHAPES)
    return out.with_suffix(".json")


def test_evaluate_refits_its_folds_with_the_block_over_bare_rows_and_epilogue_groups(block_data, block_model, capsys):
    """Catches: evaluate featurising without the model's blocks (its folds then never see the
    epilogue, and the model itself cannot be scored), or the label rows left out."""
    argv = ["-q", "evaluate", "--data", str(block_data), "--model", str(block_model), "--scheme", "shape"]
    argv += ["--folds", "2", "--no-baselines", "--json", "--feature-block", "epilogue"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["feature_blocks"] == ["epilogue"] and result["shapes"] == 2 * len(SHAPES)
    ops = result["headroom_capture"]["shape"]["realistic"]["ops"]
    assert list(ops) == ["mm", "gemm+epilogue"] and ops["gemm+epilogue"]["shapes"] == len(SHAPES)
    # held out, the model's first row of a GEMM + epilogue is a template that fuses it, not ATen
    top1 = result["headroom_capture"]["shape"]["detail"]["rankers"]["cost_model"]["top_k"]["1"]["ops"]
    assert top1["gemm+epilogue"]["capture"] > 0.9, top1
    assert ops["mm"]["aten_plus_k"]["cost_model"]["4"] is None  # bare: ATen is the best, no headroom


def test_evaluate_uses_the_models_blocks_and_refuses_others(block_data, block_model, tmp_path, capsys):
    from kselect.training.learn.held_out import evaluation_blocks

    assert evaluation_blocks(CostModel.load(block_model)) == ("epilogue",)  # no flag: the sidecar's
    argv = ["-q", "evaluate", "--data", str(block_data), "--model", str(block_model)]
    assert main([*argv, "--feature-block", "scaled_mm"]) != 0
    err = capsys.readouterr().err
    assert "--feature-block scaled_mm" in err and "--feature-block epilogue" in err, err
    bare = tmp_path / "bare"  # no epilogue labels: its folds could not fit the block as train does
    DatasetDir(bare).append(_bare_rows(), "bare")
    DatasetDir(bare).write_fingerprint(FINGERPRINT)
    assert main(["-q", "evaluate", "--data", str(bare), "--model", str(block_model)]) != 0
    err = capsys.readouterr().err
    assert "--feature-block epilogue" in err and "epilogue_labels.jsonl" in err, err


def test_datasets_without_labels_keep_their_bare_rows_and_one_must_have_them(tmp_path):
    bare = [(pd.DataFrame(_bare_rows()), FINGERPRINT)]
    with pytest.raises(EpilogueLabelsError, match="collect-epilogue"):
        with_label_rows(bare, [tmp_path])
    append_records(tmp_path / "a", _label_records())
    (rows, _), (other, _) = with_label_rows(bare * 2, [tmp_path / "a", tmp_path])
    assert len(rows) == 2 * len(other) and "epilogue" not in other
    # pooled with another card's rows: each row's block from its own card's bandwidth
    h100 = {**FINGERPRINT, "fingerprint_id": "h100like", "mem_bandwidth_gbs": 3350.0}
    pooled, devices = pool([(rows, FINGERPRINT), (rows, h100)])
    X = featurize_rows(pooled, devices, ("epilogue",))
    assert X.shape == (2 * len(rows), len(B.feature_names(["epilogue"])))
    mine = pooled["fingerprint_id"].to_numpy() == "h100like"
    assert np.array_equal(X[mine, len(F.FEATURE_NAMES) :], epilogue_columns(pooled[mine], h100).astype(np.float32))
    fused = len(F.FEATURE_NAMES) + B.EPILOGUE_FEATURE_NAMES.index("log10_t_epi_fused_ms")
    epi = rows["epilogue"].fillna("").astype(str).to_numpy() != ""
    assert (X[mine, fused][epi] > X[~mine, fused][epi]).all()  # less bandwidth: a slower epilogue


def test_the_sidecar_declares_the_block_and_the_load_reads_it(block_model):
    meta = json.loads(meta_path(block_model).read_text())
    assert meta["feature_blocks"] == [{"name": "epilogue", "version": B.EPILOGUE_BLOCK_VERSION}]
    assert meta["feature_names"] == list(B.feature_names(["epilogue"]))
    model = CostModel.load(block_model, fingerprint=FINGERPRINT)
    assert model.feature_blocks_ == ("epilogue",)
    X = F.featurize_candidates(Problem(64, 4096, 4096), CANDIDATES, FINGERPRINT)
    with pytest.raises(FeatureSchemaError, match="feature blocks"):  # the block's columns are required
        model.predict(X)


def test_the_ranker_ranks_with_the_gemms_epilogue(block_model):
    ranker = CostModelRanker(CostModel.load(block_model).set_params(cascade_keep=0), FINGERPRINT)
    assert ranker.reads_epilogue and ranker.ident.endswith(":bepilogue")
    for m, n in ((64, 4096), (1024, 14336), (128, 8192)):  # two trained shapes, one unseen
        p = Problem(m, n, 4096, "bf16", "nt")
        bare = ranker.rank(p, CANDIDATES, probe=False)
        fused = ranker.rank(p, CANDIDATES, probe=False, epilogue=gelu_bias(m, n))
        assert CANDIDATES[int(np.argmin(bare))] is ATEN, bare
        assert CANDIDATES[int(np.argmin(fused))] in TILES, fused  # a template that fuses the epilogue
        assert np.array_equal(bare, ranker.rank(p, CANDIDATES, probe=False, epilogue=NO_EPILOGUE))


def test_the_pipeline_hands_the_ranker_the_epilogue_and_keys_the_decision_by_it(block_model, tmp_path):
    ranker = CostModelRanker(CostModel.load(block_model).set_params(cascade_keep=0), FINGERPRINT)
    # predict's top-1 alone (no ATen safety net): what the scores rank first
    sel = ksi.Selector("predict", k=1, keep_aten=False, ranker=ranker, cache_dir=str(tmp_path / "cache"))
    p, fields = Problem(256, 4096, 4096, "bf16", "nt"), {"m": 256}
    epilogue = gelu_bias(256, 4096)
    kept_fused, entry_fused = sel.select("templates", p, fields, FINGERPRINT, CANDIDATES, gemm_epilogue=epilogue)
    kept_bare, entry_bare = sel.select("templates", p, fields, FINGERPRINT, CANDIDATES)
    assert [CANDIDATES[i] for i in kept_bare] == [ATEN]
    assert [CANDIDATES[i] for i in kept_fused] == [TILES[0]]
    # the decision cache tells the two apart: the epilogue is part of the key
    assert entry_fused[0] != entry_bare[0] and entry_bare[1]["gemm_epilogue"] == NO_EPILOGUE.as_dict()
    assert entry_fused[1]["gemm_epilogue"] == epilogue.as_dict()


@pytest.mark.parametrize(
    "declared, why",
    [([{"name": "prologue", "version": 1}], "does not compute"), ([{"name": "epilogue", "version": 99}], "v99")],
)
def test_a_model_declaring_an_unknown_block_goes_stock_with_one_warning(block_model, tmp_path, declared, why):
    broken = tmp_path / "broken.json"
    broken.write_text(block_model.read_text())
    meta = json.loads(meta_path(block_model).read_text())
    meta_path(broken).write_text(json.dumps({**meta, "feature_blocks": declared}))
    with pytest.raises(FeatureSchemaError, match=why):
        CostModel.load(broken)
    reset_warnings()
    sel = ksi.Selector("predict", model=str(broken))
    cpu = torch.device("cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for m in (64, 256):  # two GEMMs: one warning
            p = Problem(m, 4096, 4096, "bf16", "nt")
            kept = sel.select_items("templates", CANDIDATES, lambda p=p: (p, {"m": m}, cpu), list)
            assert kept == CANDIDATES  # stock: every choice left to Inductor
    ours = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(ours) == 1 and why in ours[0] and "stock" in ours[0], ours
    assert sel.stats["fallbacks"] == 2
    with pytest.raises(RankerUnavailable):
        sel.ranker_for({**FINGERPRINT, "fingerprint_id": "another"})


def test_shipped_models_declare_no_block_and_see_the_features_they_always_saw():
    from kselect.selector.model.discovery import shipped_models

    cands = [ATEN, DK, *TILES]
    for path in shipped_models():
        meta = json.loads(meta_path(path).read_text())
        assert "feature_blocks" not in meta and meta["feature_names"] == list(F.FEATURE_NAMES), path
        model = CostModel.load(path)
        assert model.feature_blocks_ == () and model.feature_names_ == F.FEATURE_NAMES
        ranker = CostModelRanker(model, model.fingerprint)
        p = Problem(333, 4096, 4096, ranker.own_dtypes[0], "nt")  # a dtype the model decides
        assert not ranker.reads_epilogue and ":b" not in ranker.ident
        X = F.featurize_candidates(p, cands, model.fingerprint)
        assert X.shape == (len(cands), len(F.FEATURE_NAMES))
        assert B.with_blocks(X, model.feature_blocks_, cands, model.fingerprint, gelu_bias(333, 4096)) is X
        want = model.selection_cost(X)
        assert np.array_equal(ranker.rank(p, cands, probe=False), want)
        # an epilogue handed to a model without the block changes nothing
        assert np.array_equal(ranker.rank(p, cands, probe=False, epilogue=gelu_bias(333, 4096)), want)
