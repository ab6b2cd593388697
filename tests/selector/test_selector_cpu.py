"""The Inductor plug-in end to end on the CPU (torch 2.13, max-autotune, frozen Linear + bmm).

Six max-autotune compiles of one module with three GEMMs (a frozen Linear, a bmm, a bmm with a
transposed operand); each GEMM has an ATen/MKL choice and a CPP micro-GEMM choice. What Inductor
benchmarks is counted by a feedback saver -- Inductor's own record, not ours. The ranker on the
CPU is a MeasuredRanker built from the stock compile's real measurements (the shipped model is
for the H200 and rightly refuses this machine, which a unit test checks).
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import re
import warnings

import numpy as np
import pytest

from kselect.selector.verify.pick import Measured

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector import config as options  # noqa: E402
from kselect.selector.compat import choice_candidates, inductor_settings, signatures, torch_release  # noqa: E402
from kselect.selector.decide import families  # noqa: E402
from kselect.selector.decide.cache import DecisionCache  # noqa: E402
from kselect.selector.decide.policy import adaptive_k, choose_kept  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker, RankerUnavailable  # noqa: E402
from kselect.selector.fingerprint import device_fingerprint  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.model.compile_price import COMPILE_BUDGET  # noqa: E402
from kselect.selector.verify.verified_winners import verified_keep  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings, warn_once  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402
from spawned_jobs import write_decisions  # noqa: E402

N_GEMMS = 3


class ThreeGemms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(96, 80)

    def forward(self, x, a, b, bt):
        return self.lin(x), torch.bmm(a, b), torch.bmm(a, bt.transpose(1, 2))


def _inputs():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(64, 96, generator=g),
        torch.randn(4, 64, 96, generator=g),
        torch.randn(4, 96, 80, generator=g),
        torch.randn(4, 80, 96, generator=g),
    )


class Benchmarks:
    """Inductor's feedback saver: every autotune that benchmarked something, with its timings."""

    def __init__(self):
        self.runs: list[tuple[str, dict, list]] = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        self.runs.append((name, dict(timings), list(choices)))

    def counts(self) -> list[int]:
        return [len(t) for _, t, _ in self.runs]


@pytest.fixture(scope="module")
def inductor(tmp_path_factory):
    """max-autotune + freezing with every Inductor cache off and under tmp; yields a Benchmarks."""
    with inductor_sandbox(tmp_path_factory.mktemp("inductor"), Benchmarks(), freezing=True) as bench:
        yield bench


def compile_and_check(bench: Benchmarks) -> list[int]:
    """One fresh max-autotune compile; asserts outputs match eager; returns benchmark sizes."""
    bench.runs.clear()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = ThreeGemms().eval()
    args = _inputs()
    with torch.no_grad():
        got = torch.compile(model)(*args)
        want = model(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    return bench.counts()


@pytest.fixture(scope="module")
def stock(inductor):
    """The stock compile: what Inductor benchmarks without kselect, and the measured table."""
    ksi.disable()
    counts = compile_and_check(inductor)
    table: dict = {}
    for _name, timings, choices in inductor.runs:
        problem, _, _ = signatures.choices_signature(choices)  # as the selector reads them
        for choice, ms in timings.items():
            table.setdefault(problem.key, {})[choice_candidates.caller_candidate(choice).key] = ms
    return counts, table


@pytest.fixture
def fresh(inductor):
    yield inductor
    ksi.disable()


def _kept_records(caplog) -> list[tuple[str, int]]:
    out = []
    for r in caplog.records:
        m = re.search(r"kselect choices (\S+): (\d+) candidates seen, kept (\d+)", r.getMessage())
        if m:
            out.append((m.group(1), int(m.group(3))))
    return out


# ---------------------------------------------------------------------------------------
# end to end
@pytest.mark.slow
def test_stock_compile_benchmarks_every_choice(stock):
    counts, table = stock
    assert len(counts) == N_GEMMS and all(n >= 2 for n in counts)
    # a frozen Linear is x @ W^T ("nt"; mkldnn's packed_linear hands Inductor no bias node);
    # the second bmm's B is stored transposed
    assert {"mm:64x80x96:fp32:nt", "bmm4x:64x80x96:fp32:nn", "bmm4x:64x80x96:fp32:nt"} == set(table)
    assert all(
        any(k.startswith("aten:") for k in row) and any(k.startswith("cpp:") for k in row) for row in table.values()
    )


def test_predict_keeps_top1_and_benchmarks_nothing(stock, fresh, caplog):
    _, table = stock
    caplog.set_level(logging.INFO, logger="kselect.selector")
    sel = ksi.enable("predict", ranker=MeasuredRanker(table))
    with warnings.catch_warnings():
        warnings.simplefilter("error", KselectFallbackWarning)
        counts = compile_and_check(fresh)
    assert counts == []  # one choice left per GEMM: Inductor benchmarked nothing
    kept = _kept_records(caplog)
    assert sorted(p for p, _ in kept) == sorted(table) and all(n == 1 for _, n in kept)
    chosen = {
        m.group(1): m.group(2)
        for r in caplog.records
        if (m := re.search(r"kselect choices (\S+): .*chosen \['([^']+)'\]", r.getMessage()))
    }
    assert chosen == {p: min(row, key=row.get) for p, row in table.items()}
    assert sel.stats["decisions"] == N_GEMMS and sel.stats["fallbacks"] == 0


class TemplateFirst:
    """Unit-free ranking scores (like the cost model's): every non-ATen choice ahead of ATen by 1."""

    log_time_scores = False
    ident = "template-first"

    def rank(self, problem, candidates):
        return np.array([1.0 if c.backend == "aten" else 0.0 for c in candidates])


@pytest.mark.parametrize("margin, picked", [(0.5, "cpp"), (2.5, "aten")])
def test_predict_aten_margin_in_a_real_compile(fresh, caplog, margin, picked):
    """Through Inductor's hook: with two choices per GEMM ATen trails the template by 2 sd, so
    a 0.5 sd margin keeps the template and a 2.5 sd margin ATen; either compile matches eager."""
    caplog.set_level(logging.INFO, logger="kselect.selector")
    sel = ksi.enable("predict", ranker=TemplateFirst(), aten_margin=margin)
    assert compile_and_check(fresh) == []  # predict: nothing benchmarked
    chosen = [
        m.group(1)
        for r in caplog.records
        if (m := re.search(r"kselect choices \S+: .*chosen \['([^':]+):", r.getMessage()))
    ]
    assert chosen and set(chosen) == {picked}, chosen
    assert sel.stats["decisions"] == N_GEMMS and f":aten_margin={margin}:" in sel.uuid()


def test_verify_prunes_to_k_and_cache_makes_recompile_benchmark_free(stock, fresh, caplog, tmp_path):
    _, table = stock
    caplog.set_level(logging.INFO, logger="kselect.selector")
    ranker = MeasuredRanker(table)
    sel = ksi.enable("verify", k=1, cache_dir=tmp_path / "decisions", ranker=ranker)
    counts = compile_and_check(fresh)
    kept = dict(_kept_records(caplog))
    assert len(kept) == N_GEMMS
    # k=1 + the ATen safety net: at most 2 kept, and Inductor benchmarked exactly the kept set
    assert all(n <= 2 for n in kept.values())
    assert sorted(counts) == sorted(n for n in kept.values() if n > 1)
    assert sel.stats["verified"] == len(counts)
    files = list((tmp_path / "decisions").rglob("*.json"))
    assert len(files) == N_GEMMS and all(json.loads(f.read_text())["kept"] for f in files)

    # a new process-like start: Dynamo reset, Inductor caches off, a new Selector on the same dir
    caplog.clear()
    sel2 = ksi.enable("verify", k=1, cache_dir=tmp_path / "decisions", ranker=ranker)
    assert compile_and_check(fresh) == []  # every GEMM: the cached, verified winner only
    assert sel2.stats == {"decisions": 0, "cache_hits": N_GEMMS, "fallbacks": 0, "verified": 0, "measured": 0}


def test_verify_kselect_timing_measures_kept_set_itself(stock, fresh, caplog, tmp_path):
    """verify_timing="kselect" (the GPU default): kselect runs, checks and times the kept set with
    the collector's harness and hands Inductor the winner alone. On the CPU only the plain bmm has
    an ATen and a CPP choice over the same input buffers; the other two GEMMs' choices take
    different buffers (packed weight; a materialised transpose), which kselect cannot time side
    by side: Inductor benchmarks those, with one warning."""
    _, table = stock
    cpp_first = {p: {c: (1.0 if c.startswith("cpp:") else 2.0) for c in row} for p, row in table.items()}
    caplog.set_level(logging.INFO, logger="kselect.selector")
    sel = ksi.enable("verify", k=1, cache_dir=tmp_path / "d", ranker=MeasuredRanker(cpp_first), verify_timing="kselect")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = compile_and_check(fresh)
    ours = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(ours) == 1 and "take different inputs" in ours[0], ours
    measured = list(sel.measurements)
    assert [m["problem"] for m in measured] == ["bmm4x:64x80x96:fp32:nn"], measured
    m = measured[0]
    assert set(m["ms"]) == set(table["bmm4x:64x80x96:fp32:nn"]) and m["method"] == "cpu_wall"
    assert all(0 < t < float("inf") for t in m["ms"].values()) and not m["dropped"], m
    # each timed choice's spread and replays are recorded too (kselect retime writes them as rows)
    assert set(m["stats"]) == set(m["ms"]), m
    assert all(s["reps"] > 0 and s["time_min_ms"] <= m["ms"][k] <= s["time_max_ms"] for k, s in m["stats"].items())
    # the winner follows verify's rule over the recorded rounds: a template only beyond ATen's noise
    keys = list(m["ms"])
    rule = Measured(
        ms=[m["ms"][k] for k in keys],
        rounds={i: m["rounds"][k] for i, k in enumerate(keys)},
        reference=next(i for i, k in enumerate(keys) if k.startswith("aten:")),
    )
    assert m["winner"] == keys[rule.best], m
    # the CPP template compiled in a thread while ATen ran as the reference; the record says
    # where the wall time went
    assert m["compiled_in"] == "threads", m
    assert {"operands", "reference", "compile_wait", "first_runs", "timing"} <= set(m["phases_ms"]), m
    assert sum(m["phases_ms"].values()) <= m["wall_ms"] + 1.0, m
    # the CPP template's compile, named by its key, within the compile wait's span
    cpp = [k for k in m["ms"] if k.startswith("cpp:")]
    assert list(m["compiles"]["per_choice"]) == cpp, m["compiles"]
    t = m["compiles"]["per_choice"][cpp[0]]
    assert 0 < t["wall_ms"] <= m["compiles"]["span_ms"] + 1e-3 and t["cpu_ms"] >= 0, m["compiles"]
    assert m["memory_mb"] == {}  # no CUDA allocator to read or release
    assert sorted(counts) == [2, 2]  # Inductor benchmarked only the other two
    assert sel.stats["measured"] == 2 and sel.stats["verified"] == N_GEMMS, sel.stats
    cached = [json.loads(f.read_text()) for f in (tmp_path / "d").rglob("*.json")]
    assert [m["winner"]] in [c["kept"] for c in cached if c["key_fields"].get("verified")]

    sel2 = ksi.enable(
        "verify", k=1, cache_dir=tmp_path / "d", ranker=MeasuredRanker(cpp_first), verify_timing="kselect"
    )
    assert compile_and_check(fresh) == []  # every winner from the cache
    assert sel2.stats["measured"] == 0 and sel2.stats["decisions"] == 0, sel2.stats


def test_verify_timing_option_is_validated():
    with pytest.raises(ValueError, match="verify_timing"):
        ksi.Selector("verify", verify_timing="fastest")
    with pytest.raises(options.OptionError, match="KSELECT_VERIFY_TIMING"):
        options.read({"KSELECT_VERIFY_TIMING": "sometimes"})
    assert options.read({"KSELECT_VERIFY_TIMING": "Inductor"})["verify_timing"] == "inductor"


def _one_fallback_warning(bench, stock_counts) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = compile_and_check(bench)
    ours = [w for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]  # one per cause, not one per GEMM
    assert sorted(counts) == sorted(stock_counts)  # stock behaviour: every choice benchmarked
    return str(ours[0].message)


def test_corrupt_model_file_is_refused_by_enable_and_the_compile_stays_stock(stock, fresh, tmp_path):
    """A model file the user names is read by enable(): a truncated booster raises there, naming
    the file, nothing is installed, and the compile after it is stock Inductor's, silently."""
    from kselect.selector.model import artifact
    from kselect.selector.model.cost_model import ModelError
    from kselect.selector.model.features import FEATURE_NAMES, FEATURE_SCHEMA_VERSION

    bad = tmp_path / "bad.json"  # a valid sidecar, a truncated booster
    bad.write_text('{"learner": {"truncated')
    (tmp_path / "bad.meta.json").write_text(
        json.dumps({**artifact.header("cost-model", FEATURE_NAMES), "feature_schema_version": FEATURE_SCHEMA_VERSION})
    )
    with pytest.raises(ModelError, match="cannot read XGBoost model") as e:
        ksi.enable("predict", model=str(bad))
    assert str(bad) in str(e.value) and ksi.current() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", KselectFallbackWarning)
        assert sorted(compile_and_check(fresh)) == sorted(stock[0])  # every choice benchmarked


class FailingRanker:
    """A ranker with a bug: every call raises."""

    log_time_scores = True
    ident = "failing"

    def rank(self, problem, candidates):
        raise ZeroDivisionError("ranker bug")


def test_raising_ranker_falls_back_once(stock, fresh):
    sel = ksi.enable("verify", k=2, ranker=FailingRanker())
    msg = _one_fallback_warning(fresh, stock[0])
    assert "ZeroDivisionError" in msg and "stock" in msg
    assert sel.stats["fallbacks"] == N_GEMMS


# ---------------------------------------------------------------------------------------
# units (no compile)
def _h200_fingerprint():
    from kselect.models import shipped_model_path

    try:
        return json.loads(shipped_model_path("h200-bf16.meta.json").read_text())["fingerprint"]
    except FileNotFoundError:
        pytest.skip("the shipped H200 model is not in this checkout")


def test_shipped_model_refuses_cpu_and_other_gpus_ranks_h200():
    h200 = _h200_fingerprint()
    sel = ksi.Selector("predict")
    with pytest.raises(RankerUnavailable) as e:
        sel.ranker_for(device_fingerprint(torch.device("cpu")))
    assert e.value.cause == "no-gpu"
    other = {
        **h200,
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "sm_count": 108,
        "compute_capability": "8.0",
        "fingerprint_id": "a100",
    }
    with pytest.raises(RankerUnavailable):
        sel.ranker_for(other)
    ranker = sel.ranker_for(h200)
    cands = [Candidate.make("aten", "mm")] + [
        Candidate.make("triton", "mm", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=4)
        for bm in (16, 64, 128)
        for bn in (32, 128, 256)
    ]
    scores = ranker.rank(Problem(333, 7168, 5120, "bf16"), cands)
    assert scores.shape == (len(cands),) and np.isfinite(scores).all()
    with pytest.raises(RankerUnavailable) as e:  # no fp32 data in the shipped model
        ranker.rank(Problem(333, 7168, 5120, "fp32"), cands)
    assert e.value.cause == "dtype-fp32"


def test_a_model_for_another_gpu_is_refused_and_its_own_gpu_ranks():
    """The H200 model's ranker on an A100 (another GPU, another architecture) is refused with
    the device named -- that GEMM goes to stock -- and on the H200 it ranks: CostModelRanker.check
    itself, and the selector given the loaded model (`enable(model=CostModel)`), which checks each
    GPU as it meets it.

    Fails on the mutation: `check_device` skipped in CostModelRanker.check
    (selector/decide/rankers.py): the H200 model would then rank the A100's GEMMs silently."""
    from kselect.models import shipped_model_path
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel

    h200 = _h200_fingerprint()
    a100 = {
        **h200,
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "sm_count": 108,
        "compute_capability": "8.0",
        "fingerprint_id": "a100",
    }
    model = CostModel.load(shipped_model_path("h200-bf16.json"))
    with pytest.raises(RankerUnavailable) as e:
        CostModelRanker(model, a100).check()
    assert e.value.cause == "device", e.value
    assert "A100" in str(e.value) and "H200" in str(e.value) and "stock" in str(e.value)
    CostModelRanker(model, h200).check()
    sel = ksi.enable("predict", model=model)
    try:
        with pytest.raises(RankerUnavailable) as e:
            sel.ranker_for(a100)
        assert e.value.cause == "device", e.value
        assert isinstance(sel.ranker_for(h200), CostModelRanker)
    finally:
        ksi.disable()


def test_gemm_signature_reads_ops_and_layouts():
    from torch._inductor.ir import Buffer, FixedLayout

    def buf(name, size, stride):
        return Buffer(name=name, layout=FixedLayout(torch.device("cpu"), torch.bfloat16, size, stride))

    a, a_t = buf("a", [64, 96], [96, 1]), buf("at", [64, 96], [1, 64])
    b, w = buf("b", [96, 80], [80, 1]), buf("w", [80, 96], [96, 1])
    bias = buf("bias", [64, 80], [0, 1])  # broadcast row: never mistaken for A
    cases = [
        ((a, b), [64, 80], None, "mm:64x80x96:bf16:nn"),
        ((a_t, w), [64, 80], "mm", "mm:64x80x96:bf16:tt"),
        ((bias, a, w), [64, 80], None, "addmm:64x80x96:bf16:nt"),
        (
            (buf("ba", [3, 64, 96], [6144, 96, 1]), buf("bb", [3, 96, 80], [7680, 1, 96])),
            [3, 64, 80],
            "bmm",
            "bmm3x:64x80x96:bf16:nt",
        ),
    ]
    for nodes, out, op, key in cases:
        problem, fields, device = signatures.gemm_signature(nodes, out, op)
        assert problem.key == key and device.type == "cpu"
        assert [i[1] for i in fields["inputs"]] == [list(n.get_stride()) for n in nodes]
    with pytest.raises(ValueError):
        signatures.gemm_signature((a, buf("x", [50, 80], [80, 1])), [64, 80])


def test_adaptive_k_follows_confidence_and_never_exceeds_cap():
    close = np.log([1.00, 1.02, 1.05, 1.08, 1.09, 1.5])
    far = np.log([1.00, 1.4, 1.5, 1.6])
    assert adaptive_k(close, cap=4, log_time=True) == 4
    assert adaptive_k(close, cap=2, log_time=True) == 2
    assert adaptive_k(far, cap=4, log_time=True) == 1
    # unit-free ranking margins: judged against their spread
    assert adaptive_k(np.array([0.0, 0.01, 0.02, 5.0, 6.0, 7.0]), cap=8, log_time=False) == 3
    assert adaptive_k(np.array([0.0, 9.0, 9.5, 10.0]), cap=8, log_time=False) == 1
    # a floor: a clear winner still keeps the runner-up; the cap and the list length still bound it
    assert adaptive_k(far, cap=4, log_time=True, floor=2) == 2
    assert adaptive_k(close, cap=4, log_time=True, floor=2) == 4
    assert adaptive_k(far, cap=1, log_time=True, floor=2) == 1
    assert adaptive_k(np.log([1.0]), cap=4, log_time=True, floor=2) == 1


def test_min_k_keeps_the_runner_up_even_behind_a_clear_winner():
    """Verify's floor: min_k=2 measures #2 too (held out: 99.0 % of the best vs 94.7 % at 1)."""
    cands = [Candidate.make("triton", "mm", BLOCK_M=b) for b in (16, 32, 64)] + [Candidate.make("aten", "mm")]
    scores = np.log([1.0, 3.0, 4.0, 5.0])  # #1 far ahead
    assert choose_kept(cands, scores, "verify", 4, True, True)[0] == [0, 3]  # default floor 1
    kept, why = choose_kept(cands, scores, "verify", 4, True, True, min_k=2)
    assert kept == [0, 1, 3] and "adaptive k=2" in why
    assert choose_kept(cands, scores, "verify", 1, True, True, min_k=2)[0] == [0, 3]  # the cap wins
    # ATen first and a clear winner: ATen + the best template
    assert choose_kept(cands, np.log([3.0, 4.0, 5.0, 1.0]), "verify", 4, True, True, min_k=2)[0] == [3, 0]
    with pytest.raises(ValueError, match="min_k"):
        ksi.Selector("verify", min_k=0)


def test_predict_keeps_aten_unless_a_template_clearly_outscores_it():
    """predict's ATen margin (ranking scores, unit-free): a template top-1 within `aten_margin`
    standard deviations of ATen's score gives way to ATen (nothing to compile); a clear winner
    stays; margin 0, keep_aten=False and measured-time scores keep the top-1 as before."""
    cands = [Candidate.make("triton", "mm", BLOCK_M=b) for b in (16, 32, 64, 128)] + [Candidate.make("aten", "mm")]
    close = np.array([0.0, 1.0, 2.0, 3.0, 0.3])  # sd ~1.1: ATen 0.3 behind the template
    clear = np.array([0.0, 1.0, 2.0, 3.0, 1.5])  # ATen 1.5 behind: > 0.5 sd (~0.56)
    kept, why = choose_kept(cands, close, "predict", 4, True, False, aten_margin=0.5)
    assert kept == [4] and "-> ATen" in why and cands[0].key in why
    assert choose_kept(cands, clear, "predict", 4, True, False, aten_margin=0.5)[0] == [0]
    assert choose_kept(cands, close, "predict", 4, True, False, aten_margin=0.0)[0] == [0]
    assert choose_kept(cands, close, "predict", 4, False, False, aten_margin=0.5)[0] == [0]  # opted out
    assert choose_kept(cands, close, "predict", 4, True, True, aten_margin=0.5)[0] == [0]  # measured
    assert choose_kept(cands, np.array([1.0, 2.0, 3.0, 4.0, 0.0]), "predict", 4, True, False, aten_margin=0.5)[0] == [
        4
    ]  # ATen is #1
    no_aten = np.array([0.0, 1.0, 2.0, 3.0, np.nan])  # ATen unscored
    assert choose_kept(cands, no_aten, "predict", 4, True, False, aten_margin=0.5)[0] == [0]
    # verify is untouched by it: its kept set holds ATen anyway
    assert choose_kept(cands, close, "verify", 4, True, False, aten_margin=5.0)[0][-1] == 4
    with pytest.raises(ValueError, match="aten_margin"):
        ksi.Selector("predict", aten_margin=-0.1)


def test_choose_kept_modes_and_aten_safety_net():
    cands = [Candidate.make("triton", "mm", BLOCK_M=b) for b in (16, 32, 64)] + [Candidate.make("aten", "mm")]
    scores = np.log([1.0, 1.01, 2.0, 3.0])
    assert choose_kept(cands, scores, "predict", 4, True, True)[0] == [0]
    kept, why = choose_kept(cands, scores, "verify", 4, True, True)
    assert kept == [0, 1, 3] and "ATen" in why
    assert choose_kept(cands, scores, "verify", 4, False, True)[0] == [0, 1]
    with pytest.raises(RankerUnavailable):
        choose_kept(cands, np.full(4, np.nan), "verify", 4, True, True)


def test_fixed_k_keeps_the_cap_whatever_the_gaps():
    cands = [Candidate.make("triton", "mm", BLOCK_M=16 * (i + 1)) for i in range(5)] + [Candidate.make("aten", "mm")]
    scores = np.array([0.0, 9.0, 9.5, 10.0, 11.0, 12.0])  # #1 far ahead: adaptive keeps it alone
    assert choose_kept(cands, scores, "verify", 3, True, False)[0] == [0, 5]
    kept, why = choose_kept(cands, scores, "verify", 3, True, False, adaptive=False)
    assert kept == [0, 1, 2, 5] and "fixed k=3" in why  # the cap, then the ATen safety net
    assert choose_kept(cands[:2], scores[:2], "verify", 3, False, False, adaptive=False)[0] == [0, 1]
    assert choose_kept(cands, scores, "predict", 3, True, False, adaptive=False)[0] == [0]


def test_verify_keeps_one_tile_per_family_where_warps_or_stages_are_all_that_differ():
    """lm_head's case (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k s3): the model's top two were one BN256 tile with
    8 and 4 warps. The second slot goes to the next tile shape instead, at the same count; a
    decompose-k split is a shape of its own; fewer families than slots keep fewer."""

    def tile(bn, stages, warps, group=8):
        return Candidate.make(
            "triton", "mm", BLOCK_M=16, BLOCK_N=bn, BLOCK_K=128, GROUP_M=group, num_stages=stages, num_warps=warps
        )

    cands = [
        tile(256, 3, 8),
        tile(256, 3, 4),
        tile(256, 4, 8, group=4),
        tile(128, 4, 2),
        tile(128, 5, 2),
        Candidate.make("triton", "decompose_k", BLOCK_M=16, BLOCK_N=128, BLOCK_K=128, k_split=4),
        Candidate.make("aten", "mm"),
    ]
    scores = np.array([0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 9.0])
    kept, why = choose_kept(cands, scores, "verify", 2, True, False, adaptive=False)
    assert kept == [0, 3, 6] and "one per tile family" in why  # BN256 W8, BN128 S4, ATen
    assert choose_kept(cands, scores, "verify", 3, True, False, adaptive=False)[0] == [0, 3, 5, 6]
    kept, _ = choose_kept(cands, scores, "verify", 4, True, False)  # adaptive: all six are close
    assert kept == [0, 3, 5, 6]  # three tile families and ATen
    assert families.tile_family(cands[0]) == families.tile_family(cands[2]) != families.tile_family(cands[3])
    # only the knobs that do not change the tile's shape are ignored
    assert families.FAMILY_FREE_KNOBS == {"GROUP_M", "num_stages", "num_warps"}


def test_known_broken_choices_are_never_kept(monkeypatch):
    dk = Candidate.make("triton", "decompose_k", k_split=4)
    bf16 = Problem(16, 4096, 131072, "bf16")
    monkeypatch.setattr(torch, "__version__", "2.11.0+cu130")
    assert torch_release.broken_templates(bf16) == {"decompose_k"}
    assert not torch_release.broken_templates(Problem(16, 4096, 131072, "fp16"))
    sel = ksi.Selector("predict", ranker=MeasuredRanker({bf16.key: {dk.key: 0.25, "aten:mm": 0.30}}))
    fp = device_fingerprint(torch.device("cpu"))
    kept, _ = sel.select("templates", bf16, {}, fp, [dk, Candidate.make("aten", "mm")])
    assert kept == [1]  # the measured-faster decompose-k cannot run on 2.11
    monkeypatch.setattr(torch, "__version__", "2.13.0")
    assert not torch_release.broken_templates(bf16)


def test_env_var_enables_on_import(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import kselect.selector as s, kselect.selector.inductor.lifecycle as i; "
        "sel = i.current(); print(sel.mode, sel.k, sel.cache.root); s.print_options()"
    )
    env = {**os.environ, "KSELECT_MODE": "predict", "KSELECT_K": "2", "KSELECT_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, *help_lines = out.stdout.splitlines()
    assert first == f"predict 2 {tmp_path}" and len(help_lines) == len(options.OPTIONS)


def test_measured_ranker_from_csv(tmp_path):
    csv = tmp_path / "cpu.csv"
    csv.write_text("problem,candidate,ms\nmm:8x8x8:fp32:nn,aten:mm,0.5\nmm:8x8x8:fp32:nn,cpp:gemm,0.25\n")
    ranker = MeasuredRanker.from_csv(csv)
    cands = [Candidate.make("aten", "mm"), Candidate.make("cpp", "gemm"), Candidate.make("cpp", "other")]
    scores = ranker.rank(Problem(8, 8, 8, "fp32", "nn"), cands)
    assert scores[1] < scores[0] and np.isnan(scores[2])
    with pytest.raises(RankerUnavailable):
        ranker.rank(Problem(8, 8, 16, "fp32", "nn"), cands)


def test_verified_keep_distrusts_inductor_aten_numbers_on_gpu_only():
    tri, aten = Candidate.make("triton", "mm", BLOCK_M=64), Candidate.make("aten", "mm")
    assert verified_keep({tri: 0.050, aten: 0.060}, "cuda") == [tri, aten]  # ATen maybe misread
    assert verified_keep({tri: 0.050, aten: 0.100}, "cuda") == [tri]  # beyond the misread factor
    assert verified_keep({tri: 0.050, aten: 0.060}, "cpu") == [tri]
    assert verified_keep({tri: float("inf")}, "cuda") == []
    # ATen timed under a CUDA graph (no host-dispatch bias): Inductor's verdict is trusted
    assert verified_keep({tri: 0.050, aten: 0.060}, "cuda", aten_faithful=True) == [tri]


def test_background_cache_writes_are_read_back_at_once_and_land_on_disk(tmp_path):
    from kselect.selector.decide.cache import candidate_set_digest, decision_key

    first = DecisionCache(tmp_path)
    first.put_later("ef56", ["triton:mm:BM64"], {"candidates": ["a", "b"]})
    first.put_later("ef56", ["aten:mm"])  # the later decision wins
    assert DecisionCache(tmp_path).get("ef56") == ["aten:mm"]  # another cache, same directory
    first.flush()
    data = json.loads((tmp_path / "ef" / "ef56.json").read_text())
    assert data["kept"] == ["aten:mm"] and not list(tmp_path.rglob("*.tmp"))
    # the candidate set enters the key order-free, by content
    assert candidate_set_digest(["x", "y", "z"]) == candidate_set_digest(("z", "x", "y"))
    assert candidate_set_digest(["x", "y"]) != candidate_set_digest(["x", "z"])
    assert decision_key({"op": "mm", "candidates": ["x", "y"]}) == decision_key({"candidates": ["y", "x"], "op": "mm"})
    assert decision_key({"op": "mm", "candidates": ["x", "y"]}) != decision_key({"op": "mm", "candidates": ["x"]})


def test_cache_roundtrip_and_corrupt_file_warns_once(tmp_path):
    reset_warnings()
    cache = DecisionCache(tmp_path)
    cache.put("ab12", ["aten:mm"], {"op": "mm"})
    assert cache.get("ab12") == ["aten:mm"] and cache.get("ffff") is None
    for key in ("cd34", "cd35"):
        (tmp_path / key[:2]).mkdir(exist_ok=True)
        (tmp_path / key[:2] / f"{key}.json").write_text('{"format": 1, "kept": [')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get("cd34") is None and cache.get("cd35") is None
    assert len([w for w in caught if issubclass(w.category, KselectFallbackWarning)]) == 1
    assert not list(tmp_path.rglob("*.tmp"))


def test_cache_is_safe_with_concurrent_writers(tmp_path):
    procs = [mp.get_context("spawn").Process(target=write_decisions, args=(str(tmp_path), i)) for i in range(3)]
    for p in procs:
        p.start()
    cache = DecisionCache(tmp_path)
    reset_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while any(p.is_alive() for p in procs):
            cache.get("samekey")  # never a torn file: None or a whole decision
    assert not [w for w in caught if issubclass(w.category, KselectFallbackWarning)]
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert re.fullmatch(r"cand\d-49", cache.get("samekey")[0])  # some writer's last decision
    assert not list(tmp_path.rglob("*.tmp"))


def test_options_env_and_help():
    assert options.read({}) == {
        "mode": "off",
        "k": 4,
        "cache_dir": None,
        "model": None,
        "verify_timing": "auto",
        "epilogue_fusion": False,
        "time_fused": False,
        "adaptive_k": True,
        "min_k": 1,
        "aten_margin": 2.0,
        "early_decision": True,
        "release_memory": True,
        "warm_while_compiling": True,
        "compile_in": "threads",
        "compile_budget": COMPILE_BUDGET,
        "measured_picks": True,
        "warm_start": True,
    }
    assert options.read({"KSELECT_WARM_START": "off"})["warm_start"] is False
    assert options.read({"KSELECT_MEASURED_PICKS": "off"})["measured_picks"] is False
    assert options.read({"KSELECT_ATEN_MARGIN": "0"})["aten_margin"] == 0.0
    assert options.read({"KSELECT_COMPILE_BUDGET": "0"})["compile_budget"] == 0.0
    assert options.read({"KSELECT_EARLY_DECISION": "off"})["early_decision"] is False
    assert options.read({"KSELECT_RELEASE_MEMORY": "off"})["release_memory"] is False
    assert options.read({"KSELECT_WARM_WHILE_COMPILING": "off"})["warm_while_compiling"] is False
    assert options.read({"KSELECT_COMPILE_IN": "Workers"})["compile_in"] == "workers"
    assert options.read({"KSELECT_ADAPTIVE_K": "off"})["adaptive_k"] is False
    assert options.read({"KSELECT_MODE": "Predict", "KSELECT_K": "2"})["mode"] == "predict"
    assert options.read({"KSELECT_EPILOGUE_FUSION": "on"})["epilogue_fusion"] is True
    assert options.read({"KSELECT_TIME_FUSED": "on"})["time_fused"] is True
    for bad in (
        {"KSELECT_MODE": "fast"},
        {"KSELECT_K": "0"},
        {"KSELECT_K": "two"},
        {"KSELECT_EPILOGUE_FUSION": "maybe"},
        {"KSELECT_ATEN_MARGIN": "-1"},
        {"KSELECT_ATEN_MARGIN": "nan"},
        {"KSELECT_EARLY_DECISION": "sometimes"},
        {"KSELECT_WARM_WHILE_COMPILING": "lukewarm"},
        {"KSELECT_COMPILE_IN": "gpu"},
        {"KSELECT_COMPILE_BUDGET": "-0.5"},
        {"KSELECT_WARM_START": "early"},
    ):
        with pytest.raises(options.OptionError, match=next(iter(bad))):
            options.read(bad)
    text = options.describe()
    assert all(o.name in text for o in options.OPTIONS)


def test_enable_from_env_installs_and_disable_restores(tmp_path):
    before = inductor_settings.current_choices()
    try:
        sel = ksi.enable_from_env(
            {
                "KSELECT_MODE": "verify",
                "KSELECT_K": "3",
                "KSELECT_CACHE_DIR": str(tmp_path),
                "KSELECT_EPILOGUE_FUSION": "1",
                "KSELECT_ADAPTIVE_K": "off",
                "KSELECT_EARLY_DECISION": "0",
                "KSELECT_RELEASE_MEMORY": "off",
                "KSELECT_WARM_WHILE_COMPILING": "off",
                "KSELECT_COMPILE_IN": "workers",
                "KSELECT_COMPILE_BUDGET": "2.5",
                "KSELECT_WARM_START": "off",
            }
        )
        assert (
            sel.mode,
            sel.k,
            sel.cache.root,
            sel.epilogue_fusion,
            sel.adaptive_k,
            sel.early_decision,
            sel.release_memory,
            sel.warm_while_compiling,
        ) == ("verify", 3, tmp_path, True, False, False, False, False)
        assert inductor_settings.current_choices().kselect_selector is sel
        with ksi.selecting("predict", k=1) as inner:
            assert inductor_settings.current_choices().kselect_selector is inner
        outer = inductor_settings.current_choices().kselect_selector  # the outer configuration is back
        assert outer.mode == "verify" and outer.epilogue_fusion is True and outer.adaptive_k is False
        assert outer.early_decision is False and outer.release_memory is False
        assert outer.warm_while_compiling is False and outer.compile_in == "workers"
        assert outer.compile_budget == 2.5
        assert outer.warm_start_on is False and outer.warm_start is not None  # workers need warm workers
    finally:
        ksi.disable()
    assert inductor_settings.current_choices() is before
    assert ksi.enable_from_env({"KSELECT_MODE": "off"}) is None
    # the handler's uuid goes into Inductor's FX-graph cache key: stable, yet mode-specific
    assert ksi.Selector("verify", k=3).uuid() == ksi.Selector("verify", k=3).uuid() != ksi.Selector("predict").uuid()
    assert ksi.Selector("verify", k=3).uuid() != ksi.Selector("verify", k=3, epilogue_fusion=True).uuid()
    assert ksi.Selector("verify", k=3).uuid() != ksi.Selector("verify", k=3, adaptive_k=False).uuid()
    assert ksi.Selector("verify", k=3).uuid() != ksi.Selector("verify", k=3, compile_budget=0).uuid()
    # freeing the measurement's memory changes no decision: the same key
    assert ksi.Selector("verify", k=3).uuid() == ksi.Selector("verify", k=3, release_memory=False).uuid()
    assert ksi.Selector("verify", k=3).uuid() == ksi.Selector("verify", k=3, warm_while_compiling=False).uuid()
    assert ksi.Selector("verify", k=3).uuid() == ksi.Selector("verify", k=3, compile_in="workers").uuid()
    assert ksi.Selector("verify", k=3).uuid() == ksi.Selector("verify", k=3, warm_start=False).uuid()
    # a configuration makes itself again; every environment option is one of its keywords
    odd = ksi.Selector(
        "predict",
        k=2,
        cache_dir=tmp_path,
        min_k=2,
        aten_margin=0.5,
        release_memory=False,
        warm_while_compiling=False,
        early_decision=False,
        compile_in="workers",
        warm_start=False,
    )
    assert ksi.Selector(**odd.settings()).settings() == odd.settings()
    assert set(options.read({})) <= set(odd.settings())
    with pytest.raises(ValueError):
        ksi.enable("fast")
    with pytest.raises(ValueError, match="compile_in must be one of"):
        ksi.Selector("verify", compile_in="gpu")


def test_warn_once_per_cause():
    reset_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_once("c1", "first") and not warn_once("c1", "again") and warn_once("c2", "other")
    assert [str(w.message) for w in caught] == ["first", "other"]


@pytest.mark.slow
def test_zero_code_activation_through_torch_autoload(tmp_path):
    """KSELECT_MODE alone (no kselect import) enables the plug-in at `import torch`; a bad
    value warns and leaves `import torch` working."""
    import os
    import subprocess
    import sys

    probe = (
        "import sys, torch\n"
        "from kselect.selector.compat import inductor_settings as c\n"
        "sel = getattr(c.current_choices(), 'kselect_selector', None)\n"
        "print(sel.mode if sel is not None else 'none', 'kselect.selector.inductor.hook' in sys.modules)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("KSELECT_")}

    def run(**env):
        return subprocess.run(
            [sys.executable, "-c", probe],
            env={**base, **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    on = run(KSELECT_MODE="predict", KSELECT_K="2")
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["predict", "True"]
    off = run()
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["none", "False"]  # unset: nothing imported, nothing installed
    bad = run(KSELECT_MODE="fastest")
    assert bad.returncode == 0, bad.stderr
    assert bad.stdout.split()[0] == "none" and "KSELECT_MODE" in bad.stderr


class _Unavailable:
    ident = "unavailable"

    def rank(self, problem, candidates):
        raise RankerUnavailable("test-unavailable", "kselect: test ranker unavailable -- stock")


def test_enable_never_changes_inductors_search_space():
    """kselect's widened space is in force only inside the templates stage of a GEMM it decides
    (tests/selector/test_op_kinds.py reads it there): Inductor's global setting, which every op
    kselect does not decide and the FX-graph cache key read, stays the user's. Catches enable()
    writing it, or disable() leaving anything behind."""
    from torch._inductor import config

    for user in ("DEFAULT", "EXHAUSTIVE"):
        with config.patch(max_autotune_gemm_search_space=user):
            for space in ("EXHAUSTIVE", "DEFAULT", None):
                ksi.enable("predict", ranker=_Unavailable(), search_space=space)
                try:
                    assert config.max_autotune_gemm_search_space == user
                finally:
                    ksi.disable()
                assert config.max_autotune_gemm_search_space == user


class _FakeChoice:
    """A ChoiceCaller as choice_candidates.caller_candidate reads it: a name (with Inductor's per-compile
    counter) and an info_dict backend; "extern" is an ATen call."""

    annotations: dict = {}

    def __init__(self, name: str, backend: str):
        self.name, self.backend = name, backend

    def info_dict(self):
        return {"backend": self.backend}


def _gpu_gemm_compile(cache_dir, op: str, compile_no: int, measured: dict, own_winner: str | None = None):
    """One max-autotune compile of one GEMM as Inductor builds it on the GPU, through the real
    Selector: the templates stage sees the KTC choices (ATen among them for mm, not for addmm,
    whose ATen Inductor builds outside the KTC path), the choices stage sees what the templates
    stage kept plus the non-KTC choices; Inductor benchmarks what is left when more than one
    and hands the timings to record_verified -- with `own_winner`, the choice kselect's own
    measurement picked by its noise rule. Returns (selector, templates kept, benchmarked, choices
    kept)."""
    problem = Problem(M=256, N=4096, K=4096, dtype="bf16", layout="nt", op=op)
    aten = "aten:addmm" if op == "addmm" else "aten:mm"
    table = {
        problem.key: {
            "triton:triton_mm_T1": 1.0,
            "triton:triton_mm_T2": 1.05,
            "triton:triton_mm_T3": 1.5,
            "triton:triton_mm_T4": 2.0,
            aten: 1.08,
        }
    }
    sel = ksi.Selector("verify", k=2, cache_dir=cache_dir, ranker=MeasuredRanker(table))
    fields = {"op": op, "out": [256, 4096], "inputs": [[[256, 4096], [4096, 1], "bf16"]]}
    signature = lambda: (problem, fields, torch.device("cpu"))  # noqa: E731
    n = 10 * compile_no  # Inductor's per-compile name counters differ; the candidate keys do not
    templates = [_FakeChoice(f"triton_mm_T{i}_{n + i}", "triton") for i in (1, 2, 3, 4)]
    extern = [_FakeChoice(op, "extern")]
    if op == "mm":
        templates = extern + templates
    kept_t = sel.select_items("templates", templates, signature, choice_candidates.caller_candidates)
    choices = (extern if op == "addmm" else []) + list(kept_t)
    kept = sel.select_items("choices", choices, signature, choice_candidates.caller_candidates)
    benchmarked = []
    if len(kept) > 1:  # Inductor's benchmark, then its feedback saver
        timings = {c: measured[choice_candidates.caller_candidate(c).key] for c in kept}
        benchmarked = sorted(choice_candidates.caller_candidate(c).key for c in kept)
        chosen = next((c for c in kept if choice_candidates.caller_candidate(c).key == own_winner), None)
        sel.record_verified(list(kept), timings, "cuda", winner=chosen)
    keys = lambda items: sorted(choice_candidates.caller_candidate(c).key for c in items)  # noqa: E731
    return sel, keys(kept_t), benchmarked, keys(kept)


@pytest.mark.parametrize("op", ["addmm", "mm"])
@pytest.mark.parametrize("winner", ["triton", "triton+aten-misread", "aten"])
def test_verify_second_compile_reuses_verified_winner_across_both_stages(tmp_path, op, winner):
    """verify mode: the first compile benchmarks the kept set; the next (new Selector, same cache
    dir) must find both stages cached even though the templates stage's cache hit shrank the
    set the choices stage sees -- and benchmark nothing (or only the two choices kept when
    Inductor's ATen number is within its misread margin)."""
    aten, t1, t2 = f"aten:{op}", "triton:triton_mm_T1", "triton:triton_mm_T2"
    measured = {
        "triton": {t1: 0.050, t2: 0.055, aten: 0.100},
        "triton+aten-misread": {t1: 0.050, t2: 0.055, aten: 0.060},
        "aten": {t1: 0.050, t2: 0.055, aten: 0.040},
    }[winner]
    verified = {"triton": [t1], "triton+aten-misread": sorted([t1, aten]), "aten": [aten]}[winner]

    sel1, kept_t, bench1, _ = _gpu_gemm_compile(tmp_path, op, 1, measured)
    assert kept_t == sorted([t1, t2] + ([aten] if op == "mm" else []))  # k=2 (+ the ATen net)
    assert bench1 == sorted([aten, t1, t2]) and sel1.stats["verified"] == 1

    for compile_no in (2, 3):  # the next compiles: nothing decided again
        sel, kept_t, bench, _ = _gpu_gemm_compile(tmp_path, op, compile_no, measured)
        assert sel.stats["decisions"] == 0 and sel.stats["fallbacks"] == 0, (compile_no, sel.stats)
        assert bench == (verified if len(verified) > 1 else []), compile_no
        if winner != "aten" or op == "mm":  # the templates stage builds only the verified templates
            assert kept_t == sorted(set(verified) - ({aten} if op == "addmm" else set())), compile_no


@pytest.mark.parametrize("op", ["addmm", "mm"])
def test_verify_caches_its_own_measurements_winner_not_the_fastest_reading(tmp_path, op):
    """kselect's own measurement kept ATen because the template's 2 % lead was inside the noise
    of its rounds: the cache must hold ATen, or the next compile runs the template the rule
    turned down."""
    aten, t1, t2 = f"aten:{op}", "triton:triton_mm_T1", "triton:triton_mm_T2"
    measured = {t1: 0.098, t2: 0.120, aten: 0.100}
    sel1, _, _, _ = _gpu_gemm_compile(tmp_path, op, 1, measured, own_winner=aten)
    assert sel1.stats["verified"] == 1
    sel, _, bench, kept = _gpu_gemm_compile(tmp_path, op, 2, measured)
    assert sel.stats["decisions"] == 0 and bench == [] and kept == [aten], (sel.stats, bench, kept)


def test_inductor_triton_ktcs_map_to_their_candidates_through_the_memo():
    """The templates stage's mapping, on real Inductor KernelTemplateChoices of an EXHAUSTIVE
    space (mm, persistent TMA and decompose-k templates, ATen): the batch path and the one-by-one
    path agree with the candidates the KTCs were built from, first time (memo filling) and again
    (memo hits); equal tiles under two templates stay two candidates; a knob outside the tile
    (EVEN_K) does not split a candidate; params that are not a plain dict take the full path."""
    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    from kselect.kernels.triton.space import triton_space
    from kselect.training.bench.rank import inductor_ktcs

    square, deep = Problem(4096, 4096, 4096, "bf16", "nt"), Problem(64, 64, 65536, "bf16", "nt")
    want = [Candidate.make("aten", "mm")] + triton_space(square, "exhaustive") + triton_space(deep, "exhaustive")
    templates = {c.template for c in want}
    assert {"mm", "persistent_tma", "decompose_k"} <= templates
    ktcs = inductor_ktcs(want)
    for _ in range(2):
        assert choice_candidates.ktc_candidates(ktcs) == want
        assert [choice_candidates.ktc_candidate(k) for k in ktcs] == want
    tiles = {c.params for c in want if c.template == "mm" and c.params} & {
        c.params for c in want if c.template == "persistent_tma"
    }
    assert tiles, "the two tile templates share tile configs"
    mm = next(c for c in want if c.backend == "triton" and c.template == "mm")
    odd = dict(mm.kwargs, EVEN_K=False, ACC_TYPE="tl.float16")
    assert (
        choice_candidates.ktc_candidate(
            KernelTemplateChoice(mm_template, DictKernelTemplateParams(odd), {}, None, None)
        )
        == mm
    )

    class OwnParams:  # a template with its own params class (no .kwargs dict)
        def to_kwargs(self):
            return dict(mm.kwargs)

    assert choice_candidates.ktc_candidates([KernelTemplateChoice(mm_template, OwnParams(), {}, None, None)]) == [mm]


def test_bench_rank_times_the_whole_predict_decision_from_inductors_choices():
    """bench_rank --decision: real KTCs -> candidates -> Selector.select with a cache miss each
    time; the recorded decision covers the mapping (map_ms inside ms)."""
    from kselect.selector.model.cost_model import CostModel
    from kselect.selector.model.discovery import shipped_models
    from kselect.training.bench.rank import bench_decision

    model = CostModel.load([p for p in shipped_models() if p.name == "h200-bf16.json"][0])
    out = bench_decision(model, Problem(512, 1024, 768, "bf16", "nt"), reps=3, pin=False)
    assert out["candidates"] > 1000 and out["reps"] == 3
    assert 0 < out["map_median_ms"] < out["decision_median_ms"] <= out["decision_p90_ms"]
    # the early way: its own enumeration instead of the mapping, warm and for a new size class
    for name in ("early_", "early_cold_"):
        assert 0 < out[f"{name}map_median_ms"] < out[f"{name}decision_median_ms"] <= out[f"{name}decision_p90_ms"]
        assert out[f"{name}phases_median_ms"]["trees"] > 0


def test_priming_the_ktc_memo_maps_mm_bmm_and_tma_ktcs_to_the_primed_candidates():
    """At model load the selector primes the KTC mapping with the EXHAUSTIVE tile space: KTCs of
    Inductor's mm, bmm and persistent-TMA templates then map to those very candidates (bmm's
    template is our "mm", as the collector names it)."""
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import mm_template, persistent_tma_mm_template
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    from kselect.kernels.problem import Problem

    # what the shipped model's ranker warms up on at load, and the selector then primes
    from kselect.kernels.triton import space as ts
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel
    from kselect.selector.model.discovery import shipped_models

    model = CostModel.load([p for p in shipped_models() if p.name == "h200-bf16.json"][0])
    ts._tile_space.cache_clear()  # as in a fresh process
    space = CostModelRanker(model, model.fingerprint).warm_up()
    assert len(space) > 2000 and len(set(space)) == len(space)
    # every row-block class's tile space is enumerated at load, not in its first GEMM's decision,
    # and its tiles are among those the load encoded and primed
    enumerated = ts._tile_space.cache_info().misses
    for m in (1, 8, 24, 64, 100, 777):
        for template in ("mm", "persistent_tma"):
            assert set(ts.template_space(Problem(m, 9216, 3072, "bf16", "nt"), template)) <= set(space)
    assert ts._tile_space.cache_info().misses == enumerated
    choice_candidates.prime_ktc_memo(space)
    assert choice_candidates.prime_ktc_memo(space) == 0  # idempotent
    objects = {"mm": (mm_template, bmm_template), "persistent_tma": (persistent_tma_mm_template,)}
    for c in [c for c in space if c.backend == "triton"][::97]:
        for template in objects[c.template]:
            kw = {"EVEN_K": False, "ACC_TYPE": "tl.float32", **c.kwargs}
            ktc = KernelTemplateChoice(template, DictKernelTemplateParams(kw), {}, None, None)
            got = choice_candidates.ktc_candidates([ktc])[0]
            assert got is c  # what Inductor's uid names, built independently of the memo:
            assert c == Candidate.make("triton", choice_candidates.template_of(template.uid)[1], **c.kwargs)


def test_verify_measures_the_set_its_templates_stage_kept_without_deciding_again():
    """The one-layer decode's lm_head with the shipped H200 model: the templates stage keeps
    four tile families + ATen; the choices stage, given exactly those choices, keeps all five
    (it used to rank them again, and the adaptive rule over five scores kept two families +
    ATen -- what the H200 measured in reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode). Choices the templates stage
    never saw (the CPU's C++ GEMMs come only there) are still decided."""
    from kselect.kernels.triton.space import template_space
    from kselect.selector.decide.rankers import CostModelRanker
    from kselect.selector.model.cost_model import CostModel
    from kselect.selector.model.discovery import shipped_models

    model = CostModel.load([p for p in shipped_models() if p.name == "h200-bf16.json"][0])
    ranker = CostModelRanker(model, model.fingerprint)
    problem = Problem(8, 128256, 4096, "bf16")
    space = [Candidate.make("aten", "mm")] + [
        c for t in ("mm", "persistent_tma", "decompose_k") for c in template_space(problem, t, "exhaustive")
    ]
    cpu = torch.device("cpu")

    def run(sel, stage, cands):
        return sel.select_items(stage, list(cands), lambda: (problem, {"m": 8}, cpu), lambda items: list(items))

    sel = ksi.Selector("verify", k=4, ranker=ranker)
    planned = run(sel, "templates", space)
    assert len(planned) == 5 and sum(c.backend == "triton" for c in planned) == 4
    assert len({families.tile_family(c) for c in planned}) == 5
    assert run(sel, "choices", planned) == planned  # measured as kept
    assert sel.decisions[-1]["why"] == "verify: the templates stage's kept set, as is"
    fresh = ksi.Selector("verify", k=4, ranker=ranker)  # no plan: decided over the five
    again = run(fresh, "choices", planned)
    assert again[0] == planned[0] and again[-1].backend == "aten"
    assert fresh.decisions[-1]["why"].startswith("verify: best template predicted")  # the gap rule
    run(sel, "templates", space)
    extra = planned + [
        Candidate.make("triton", "mm", BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=8, num_stages=2, num_warps=2)
    ]
    assert len(run(sel, "choices", extra)) < len(extra)  # a choice it never kept: decided
    assert sel.decisions[-1]["why"].startswith("verify: best template predicted")
