"""On any CUDA card kselect serves a model for (tests/gpu_model.py; every sm_90 card once an
sm_90 model serves it): kselect in max-autotune with that bf16 model (torch 2.11, Triton 3.6).

One function holds the four GEMMs of the issue -- mm (x @ W^T, "nt"), addmm (a Linear with
bias), bmm, and mm with A transposed (X^T @ dY, the weight-gradient GEMM, "tn") -- so the whole
file makes its max-autotune compiles: predict, verify (k=2), verify again on the same decision
cache, an fp32 mm that must go stock, and an fp16 and a TF32 mm that the card's model of those
dtypes decides (verify). Every compile starts from torch._dynamo.reset() with
Inductor's caches disabled (force_disable_caches; Triton's kernel cache stays: it saves compile
time and decides nothing). What Inductor benchmarked is read from its own feedback saver (as in
tests/selector/test_selector_cpu.py), attributed to a GEMM by the problem key kselect reads from the
same choices; what kselect decided is read from its log.

A check that needs what this card or its model lacks (a kept set of more than one choice, a
compile-cost model for its architecture) fails with a message; it never skips or passes with
nothing checked. The last test reports (as a GpuSelectorReport warning, shown in pytest's warnings summary) what
each stage did per GEMM: "templates" (the KTC hook, before codegen) and "choices" (the
preprocessing hook, after codegen). KSELECT_GPU_REPORT=<file.json> also dumps every detail.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import statistics
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpu_model import served_model  # noqa: E402

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.operands import relative_error  # noqa: E402
from kselect.selector.compat import autotune, choice_candidates, compile_pool, signatures  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

K = 2  # verify mode's cap; with the ATen safety net at most K + 1 choices are benchmarked
TOL = 2e-2  # relative Frobenius error vs an fp32 reference: bf16 rounding is ~4e-3
COMPILE_MODE = "max-autotune-no-cudagraphs"
INDUCTOR_PATCH = {"force_disable_caches": True, "max_autotune_gemm_backends": "ATEN,TRITON"}


@dataclass(frozen=True)
class Gemm:
    key: str  # the Problem key kselect reads from Inductor's input nodes
    op: str  # what the decision cache's key fields record as "op" ...
    out: tuple  # ... and as "out" (the output shape)


# In the order four_gemms returns them. Skinny-M shapes with large N x K: the shipped H200 model
# (Dec 2026) ranks a Triton config first for each (it ranks ATen first for most small and
# square shapes), so predict builds one Triton template (or ATen, where that template leads ATen
# by less than predict's aten_margin) and verify really benchmarks 2-3 choices. About 1.4 GB of bf16 operands; each GEMM runs in well under 0.1 ms on the H200.
GEMMS = {
    "mm_nt": Gemm("mm:16x16384x8192:bf16:nt", "mm", (16, 16384)),
    "addmm_linear": Gemm("addmm:8x16384x8192:bf16:nt", "addmm", (8, 16384)),
    "bmm": Gemm("bmm4x:8x14336x4096:bf16:nn", "bmm", (4, 8, 14336)),
    "mm_transposed_a": Gemm("mm:8x14336x14336:bf16:tn", "mm", (8, 14336)),
}
FP32_KEY = "mm:64x512x256:fp32:nt"


def four_gemms(x, w, xl, wl, bias, a, b, xk, dy):
    return (
        x @ w.t(),  # mm, W stored (N, K): "nt"
        torch.nn.functional.linear(xl, wl, bias),  # addmm(bias, x, W^T)
        torch.bmm(a, b),  # bmm, both row-major: "nn"
        xk.t() @ dy,
    )  # dW = X^T @ dY, A stored transposed: "tn"


def _randn(gen, dtype, *shape):
    return torch.randn(*shape, generator=gen, device="cuda").to(dtype)


def bf16_inputs():
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda *s: _randn(g, torch.bfloat16, *s)  # noqa: E731
    return (
        r(16, 8192),
        r(16384, 8192),  # mm: x (M, K), W (N, K)
        r(8, 8192),
        r(16384, 8192),
        r(16384),  # Linear: x (M, K), W (N, K), bias (N,)
        r(4, 8, 4096),
        r(4, 4096, 14336),  # bmm: A (B, M, K), B (B, K, N)
        r(14336, 8),
        r(14336, 14336),
    )  # dW: X (K, M), dY (K, N)


# kselect's log lines (the logger the selector's rooms share)
DECISION = re.compile(r"^kselect (templates|choices) (\S+): (\d+) candidates seen, kept (\d+) .*; chosen (\[.*\])$")
HIT = re.compile(r"^kselect (templates|choices) (\S+): decision cache hit -> kept (\[.*\])$")


@dataclass
class Compiled:
    """One max-autotune compile: outputs, Inductor's benchmarks, kselect's log and stats."""

    outputs: tuple
    runs: list  # (problem key, {Candidate: ms}) per Inductor benchmark (feedback saver)
    log: list  # kselect.selector log messages
    warnings: list  # KselectFallbackWarning messages
    stats: dict
    selector: object
    seconds: float
    cache_files: list = field(default_factory=list)  # decision-cache JSON right after the compile

    def timed(self, key):
        return [r for k, r in self.runs if k == key]

    def benchmarked(self, key):
        """Benchmarks that compared choices (a one-choice 'benchmark' compares nothing)."""
        return [r for r in self.timed(key) if len(r) > 1]

    def decisions(self, key):
        """[(stage, candidates seen, kept keys)] for this GEMM, in order."""
        return [
            (m.group(1), int(m.group(3)), ast.literal_eval(m.group(5)))
            for m in map(DECISION.match, self.log)
            if m and m.group(2) == key
        ]

    def hits(self, key):
        """[(stage, kept keys)] of decision-cache hits for this GEMM."""
        return [(m.group(1), ast.literal_eval(m.group(3))) for m in map(HIT.match, self.log) if m and m.group(2) == key]

    def describe(self, key) -> str:
        dec = ", ".join(f"{s} {seen}->{len(kept)} {kept}" for s, seen, kept in self.decisions(key)) or "none"
        hits = ", ".join(f"{s} {kept}" for s, kept in self.hits(key)) or "none"
        runs = [sorted(f"{c.key}={ms:.4f}ms" for c, ms in r.items()) for r in self.timed(key)]
        return f"{key}: decisions [{dec}]; cache hits [{hits}]; Inductor benchmarked {runs}"

    def to_json(self) -> dict:
        return {
            "seconds": self.seconds,
            "stats": self.stats,
            "warnings": self.warnings,
            "log": self.log,
            "runs": [(k, {c.key: ms for c, ms in r.items()}) for k, r in self.runs],
            "cache_files": self.cache_files,
        }


class Benchmarks:
    """Inductor's feedback saver: every autotune that benchmarked, keyed as kselect keys GEMMs."""

    def __init__(self):
        self.runs: list = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        try:
            key = signatures.choices_signature(list(choices))[0].key
        except Exception as exc:  # noqa: BLE001 -- recorded, and the tests flag unknown keys
            key = f"unreadable:{name}:{type(exc).__name__}"
        measured: dict = {}
        for choice, ms in dict(timings).items():
            cand = choice_candidates.caller_candidate(choice) or Candidate.make(
                "unmapped", str(getattr(choice, "name", ""))
            )
            measured[cand] = min(float(ms), measured.get(cand, float("inf")))
        self.runs.append((key, measured))


class LogLines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class Harness:
    def __init__(self, bench: Benchmarks, logs: LogLines):
        self.bench, self.logs = bench, logs

    def compile(self, mode: str, fn, args, **enable_kwargs) -> Compiled:
        """A fresh max-autotune compile of fn(*args) with kselect in `mode` (shipped model)."""
        from torch._inductor import config as inductor_config

        self.bench.runs.clear()
        self.logs.lines.clear()
        torch._dynamo.reset()
        sel = ksi.enable(mode, **enable_kwargs)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with inductor_config.patch(INDUCTOR_PATCH):
                    compiled = torch.compile(fn, mode=COMPILE_MODE, dynamic=False, fullgraph=True)
                    outputs = compiled(*args)
                torch.cuda.synchronize()
        finally:
            ksi.disable()
        ours = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
        return Compiled(
            outputs if isinstance(outputs, tuple) else (outputs,),
            list(self.bench.runs),
            list(self.logs.lines),
            ours,
            dict(sel.stats),
            sel,
            time.perf_counter() - t0,
        )


@pytest.fixture(scope="module")
def served():
    """(fingerprint, model) kselect serves on this card; no model for it skips, with the reason."""
    return served_model()


@pytest.fixture(scope="module")
def harness(served):
    bench, logs = Benchmarks(), LogLines()
    logger = logging.getLogger("kselect.selector")
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(logs)
    remove = autotune.add_feedback_saver(bench)
    try:
        yield Harness(bench, logs)
    finally:
        remove()
        ksi.disable()
        logger.removeHandler(logs)
        logger.setLevel(old_level)


@pytest.fixture(scope="module")
def operands(harness):
    args = bf16_inputs()
    return args, four_gemms(*[t.float() for t in args])


@pytest.fixture(scope="module")
def decisions_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("decisions")


@pytest.fixture(scope="module")
def predict(harness, operands):
    return harness.compile("predict", four_gemms, operands[0])


def _verify(harness, operands, cache_dir: Path, **settings) -> Compiled:
    """The four GEMMs compiled in verify mode at k=K, deciding through `cache_dir`."""
    return harness.compile("verify", four_gemms, operands[0], k=K, cache_dir=cache_dir, **settings)


def _cache_files(root: Path) -> list:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("*.json"))]


@pytest.fixture(scope="module")
def verify_first(harness, operands, decisions_dir):
    """verify with Inductor's own benchmark of the kept set (verify_timing="inductor")."""
    res = _verify(harness, operands, decisions_dir, verify_timing="inductor")
    res.cache_files = _cache_files(decisions_dir)  # before the second compile rewrites any
    return res


@pytest.fixture(scope="module")
def verify_again(harness, operands, decisions_dir, verify_first):
    """A new Selector on the same decision cache, Dynamo reset, Inductor caches off."""
    return _verify(harness, operands, decisions_dir, verify_timing="inductor")


@pytest.fixture(scope="module")
def own_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("decisions-own")


@pytest.fixture(scope="module")
def verify_own(harness, operands, own_dir):
    """verify as shipped on a GPU: kselect times the kept set with the collector's harness."""
    res = _verify(harness, operands, own_dir)
    res.cache_files = _cache_files(own_dir)
    return res


@pytest.fixture(scope="module")
def verify_cool(harness, operands, tmp_path_factory):
    """verify with warm_while_compiling=False, deciding afresh (its own decision cache)."""
    return _verify(
        harness,
        operands,
        tmp_path_factory.mktemp("decisions-cool"),
        warm_while_compiling=False,
    )


@pytest.fixture(scope="module")
def verify_workers(harness, operands, tmp_path_factory):
    """verify with compile_in="workers", deciding afresh, once Inductor's worker pool is up."""
    if compile_pool.warm_compile_pool() is None:
        pytest.skip("this torch compiles in one process: no compile-worker pool to use")
    return _verify(
        harness,
        operands,
        tmp_path_factory.mktemp("decisions-workers"),
        compile_in="workers",
    )


@pytest.fixture(scope="module")
def verify_own_again(harness, operands, own_dir, verify_own):
    return _verify(harness, operands, own_dir)


@pytest.fixture(scope="module")
def fp32(harness):
    g = torch.Generator(device="cuda").manual_seed(1)
    x, w = _randn(g, torch.float32, 64, 256), _randn(g, torch.float32, 512, 256)
    res = harness.compile("predict", lambda x, w: x @ w.t(), (x, w))
    return res, x @ w.t()


def _check_outputs(res: Compiled, operands, name: str) -> None:
    i = list(GEMMS).index(name)
    got, want = res.outputs[i], operands[1][i]
    assert got.dtype == torch.bfloat16 and tuple(got.shape) == GEMMS[name].out
    err = relative_error(got, want)
    assert err < TOL, f"{GEMMS[name].key}: relative error {err:.3e} vs fp32 reference"


def _verified_entries(res: Compiled, gemm: Gemm) -> list:
    out = []
    for f in res.cache_files:
        fields = f.get("key_fields", {})
        problem = fields.get("problem", {})
        if fields.get("verified") and problem.get("op") == gemm.op and list(problem.get("out", [])) == list(gemm.out):
            out.append(f["kept"])
    return out


def _known_candidate(c: Candidate) -> bool:
    """ATen, or a Triton config with its tile read from the KTC (not a name-only fallback)."""
    return c.backend == "aten" or (c.backend == "triton" and (c.get("BLOCK_M") or c.get("k_split")))


# ---------------------------------------------------------------------------------------
# predict: the model's top-1 only, nothing benchmarked
def test_predict_uses_the_served_model_without_fallbacks(predict, served):
    assert predict.warnings == []
    assert predict.stats["fallbacks"] == 0 and predict.stats["cache_hits"] == 0
    assert predict.stats["decisions"] >= len(GEMMS)
    fingerprint, model = served
    ranker = predict.selector.ranker_for(fingerprint)
    assert isinstance(ranker, CostModelRanker)
    assert ranker.model.metadata_.get("booster_file") == model.metadata_.get("booster_file")


@pytest.mark.parametrize("name", list(GEMMS))
def test_predict_decides_and_benchmarks_nothing(predict, operands, name):
    key = GEMMS[name].key
    decisions = predict.decisions(key)
    decided_for = sorted({m.group(2) for m in map(DECISION.match, predict.log) if m})
    assert decisions, f"kselect made no decision for {key}; it decided for {decided_for}"
    assert all(len(kept) == 1 for _, _, kept in decisions), predict.describe(key)
    assert any(seen > 1 for _, seen, _ in decisions), predict.describe(key)
    # one choice left: Inductor compared nothing for this GEMM
    assert not predict.benchmarked(key), predict.describe(key)
    _check_outputs(predict, operands, name)


# ---------------------------------------------------------------------------------------
# verify, k=2: at most k + ATen benchmarked; Inductor's winner cached; a recompile measures nothing
@pytest.mark.parametrize("name", list(GEMMS))
def test_verify_benchmarks_at_most_k_plus_aten(verify_first, operands, name):
    gemm = GEMMS[name]
    res = verify_first
    assert res.decisions(gemm.key), f"no decision for {gemm.key}: {res.log}"
    assert any(seen > len(kept) for _, seen, kept in res.decisions(gemm.key)), res.describe(gemm.key)
    assert all(len(r) <= K + 1 for r in res.timed(gemm.key)), res.describe(gemm.key)
    benchmarked = res.benchmarked(gemm.key)
    for r in benchmarked:
        assert any(c.backend == "aten" for c in r), "the ATen safety net was not benchmarked: " + res.describe(gemm.key)
        assert all(_known_candidate(c) for c in r), "a choice mapped to no Triton config: " + res.describe(gemm.key)
    _check_outputs(res, operands, name)
    if benchmarked:  # kselect cached Inductor's verdict: its winner (+ ATen, if it may be mis-timed)
        measured: dict = {}
        for r in benchmarked:
            for c, ms in r.items():
                measured[c] = min(ms, measured.get(c, float("inf")))
        best = min(measured, key=measured.get)
        allowed = [[best.key]]
        atens = [c for c in measured if c.backend == "aten"]
        if best.backend != "aten" and atens:
            allowed.append([best.key, min(atens, key=measured.get).key])
        entries = _verified_entries(res, gemm)
        assert entries, "no verified decision-cache entry: " + res.describe(gemm.key)
        assert all(e in allowed for e in entries), (entries, allowed, res.describe(gemm.key))


def test_verify_really_benchmarked(verify_first):
    """The checks above are vacuous for a GEMM whose kept set was one choice (a clear ATen
    winner), so at least one of the four must have had Inductor benchmark its kept set.

    Fails on the mutation: verify keeping one choice, as predict does (`if mode == "predict":`
    made always true in choose_by_gap, selector/decide/gap_policy.py)."""
    benchmarked = [g.key for g in GEMMS.values() if verify_first.benchmarked(g.key)]
    assert benchmarked, (
        "verify kept one choice per GEMM (or the model is sure of each): Inductor's benchmark of a kept "
        "set and its caching were not exercised; pick shapes the model is less sure of\n"
        + "\n".join(verify_first.describe(g.key) for g in GEMMS.values())
    )


def test_verify_stats_and_no_fallbacks(verify_first, verify_again):
    keys = {g.key for g in GEMMS.values()}
    for res in (verify_first, verify_again):
        assert res.warnings == [] and res.stats["fallbacks"] == 0, (res.warnings, res.stats)
        assert {k for k, _ in res.runs} <= keys, [k for k, _ in res.runs]
    benchmarked = {k for k, r in verify_first.runs if len(r) > 1}
    # every benchmark of a kept set found its pending cache entries
    assert verify_first.stats["verified"] == len(benchmarked), (verify_first.stats, sorted(benchmarked))
    assert verify_again.stats["cache_hits"] >= len(GEMMS), verify_again.stats


@pytest.mark.parametrize("name", list(GEMMS))
def test_verify_recompile_from_decision_cache_benchmarks_nothing(verify_first, verify_again, operands, name):
    gemm = GEMMS[name]
    entries = _verified_entries(verify_first, gemm)
    if entries:
        expected = entries[0]
    else:  # nothing compared in the first compile: its one kept choice is what was cached
        decisions = verify_first.decisions(gemm.key)
        assert decisions and len(decisions[-1][2]) == 1, verify_first.describe(gemm.key)
        expected = decisions[-1][2]
    why = f"expected {expected}\n first: {verify_first.describe(gemm.key)}\n again: {verify_again.describe(gemm.key)}"
    again = verify_again.benchmarked(gemm.key)
    if len(expected) == 1:
        assert not again, "the recompile benchmarked again: " + why
    else:  # GPU rule (docs/selector-design.md): a Triton winner with ATen within the misread factor
        assert all({c.key for c in r} == set(expected) for r in again), why  # keeps both: only those
    assert any(set(kept) == set(expected) for _, kept in verify_again.hits(gemm.key)), why
    if len(expected) == 1:
        assert not verify_again.decisions(gemm.key), "the recompile ranked again: " + why
    _check_outputs(verify_again, operands, name)


# ---------------------------------------------------------------------------------------
# verify as shipped: kselect measures the kept set itself (CUDA graphs, results checked vs ATen)
def _own_measurements(res: Compiled, key: str) -> list:
    return [m for m in res.selector.measurements if m["problem"] == key]


def _winner_by_the_rule(m: dict) -> str:
    """The winner docs/selector.md states, read from the record's rounds: the fastest template
    whose round-by-round ratio to ATen has a median below 1 - max(1 %, half the ratios' range),
    else ATen (the fastest reading where ATen's rounds are missing)."""
    finite = {k: t for k, t in m["ms"].items() if t < float("inf")}
    rounds = m.get("rounds", {})
    aten = next((k for k in finite if k.startswith("aten:") and k in rounds), None)
    if aten is None:
        return min(finite, key=finite.get)
    beating = []
    for key in finite:
        if key == aten or len(rounds.get(key, ())) != len(rounds[aten]):
            continue
        ratios = sorted(t / a for t, a in zip(rounds[key], rounds[aten]))
        if statistics.median(ratios) < 1 - max(0.01, (ratios[-1] - ratios[0]) / 2):
            beating.append(key)
    return min(beating, key=finite.get) if beating else aten


@pytest.mark.parametrize("name", list(GEMMS))
def test_verify_measures_kept_set_itself_and_inductor_benchmarks_nothing(verify_own, operands, name):
    gemm = GEMMS[name]
    res = verify_own
    assert res.warnings == [] and res.stats["fallbacks"] == 0, (res.warnings, res.stats)
    assert not res.benchmarked(gemm.key), "Inductor benchmarked a kept set: " + res.describe(gemm.key)
    kept_sets = [kept for stage, _, kept in res.decisions(gemm.key) if stage == "choices"]
    measured = _own_measurements(res, gemm.key)
    if any(len(k) > 1 for k in kept_sets):
        assert measured, f"kept {kept_sets} but kselect measured nothing: {res.log}"
        m = measured[-1]
        assert any(k.startswith("aten:") for k in m["ms"]), m  # the ATen safety net was timed
        assert m["method"] == "cuda_graph" and not m["dropped"], m
        assert m["winner"] == _winner_by_the_rule(m), m
        assert [m["winner"]] in _verified_entries(res, gemm), (m, res.cache_files)
    _check_outputs(res, operands, name)


def test_verify_compiles_while_aten_runs_and_the_gpu_warms(verify_own):
    """Every measured set's Triton templates compiled in threads while ATen ran; the GPU was
    kept busy (at least WARM_MS) until they were done, and the record says where time went."""
    from kselect.selector.verify.timing import WARM_MS

    with_templates = [m for m in verify_own.selector.measurements if any(k.startswith("triton:") for k in m["ms"])]
    assert with_templates, "no measured set held a Triton template"
    for m in with_templates:
        ph = m["phases_ms"]
        assert m["compiled_in"] == "threads", m
        assert ph["compile_wait"] >= WARM_MS and ph["timing"] > 0 and ph["reference"] > 0, m
        assert sum(ph.values()) <= m["wall_ms"] + 1.0, m
        # each Triton template's compile is timed, inside the compiles' span
        c = m["compiles"]
        assert set(c["per_choice"]) == {k for k in m["ms"] if k.startswith("triton:")}, m
        assert all(0 < t["wall_ms"] <= c["span_ms"] + 1e-3 for t in c["per_choice"].values()), m


def test_verify_cool_lets_the_gpu_idle_while_compiling_and_warms_it_before_timing(verify_cool, operands):
    """warm_while_compiling=False: the compile wait no longer holds the GPU warm-up; the timing
    phase does (WARM_MS before the first choice is timed), and the picks still compute right."""
    from kselect.selector.verify.timing import WARM_MS

    assert verify_cool.warnings == [] and verify_cool.selector.warm_while_compiling is False
    with_templates = [m for m in verify_cool.selector.measurements if any(k.startswith("triton:") for k in m["ms"])]
    assert with_templates, "no measured set held a Triton template"
    for m in with_templates:
        assert m["compiled_in"] == "threads" and m["phases_ms"]["timing"] >= WARM_MS, m
    for name in GEMMS:
        _check_outputs(verify_cool, operands, name)


def test_verify_workers_compiles_the_kept_templates_in_inductors_workers(verify_workers, operands):
    """compile_in="workers": the workers were warmed (one small Triton compile each, none
    failed), every kept Triton template went to a compile worker and was then loaded here; the
    record has each one's worker time, and the picks still compute right."""
    assert verify_workers.warnings == [] and verify_workers.selector.compile_in == "workers"
    warm = _warm_start_ended(verify_workers.selector.warm_start)["workers"]  # the pool was up
    assert warm["jobs"] >= 1 and warm["done"] == warm["jobs"] and warm["failed"] == 0 and "error" not in warm, warm
    with_templates = [m for m in verify_workers.selector.measurements if any(k.startswith("triton:") for k in m["ms"])]
    assert with_templates, "no measured set held a Triton template"
    for m in with_templates:
        assert m["compiled_in"] == "workers" and m["compiles"]["where"] == "workers", m
        for key, t in m["compiles"]["per_choice"].items():
            assert 0 < t["worker_ms"] <= t["wall_ms"], (key, t)
    for name in GEMMS:
        _check_outputs(verify_workers, operands, name)


def _warm_start_ended(ws, seconds: float = 120.0) -> dict:
    """The warm start's summary once its set-up and its workers' warm-ups have ended."""
    assert ws is not None and ws.started
    ws.join(seconds)
    deadline = time.monotonic() + seconds
    while ws.warm_workers and ws.workers.started and time.monotonic() < deadline:
        w = ws.workers.summary()
        if w["done"] + w["failed"] == w["jobs"]:
            break
        time.sleep(0.05)
    return ws.summary()


def test_verify_began_the_warm_start_as_its_compile_started(verify_workers, harness, operands, tmp_path):
    """As shipped (threads), with Inductor's pool up: the compile began the warm start; Triton's
    target was prepared in the background for this GPU and every compile worker was warmed
    without a failure; the picks compute right. warm_start=False begins nothing."""
    res = _verify(harness, operands, tmp_path / "warm")
    got = _warm_start_ended(res.selector.warm_start)
    major, minor = torch.cuda.get_device_capability()
    assert "error" not in got and got["prepare_ms"] > 0 and f"arch={major * 10 + minor}" in got["target"], got
    w = got["workers"]
    assert w["jobs"] >= 1 and w["done"] == w["jobs"] and w["failed"] == 0 and w["workers"] >= 1, w
    for name in GEMMS:
        _check_outputs(res, operands, name)
    cold = _verify(harness, operands, tmp_path / "cold", warm_start=False)
    assert cold.selector.warm_start is None and cold.warnings == []


def test_verify_prices_compiles_with_the_shipped_sm90_model_on_this_gpu(served):
    """The compile price is on for this GPU: its fingerprint finds the shipped sm_90 compile-cost
    model, and for lm_head at 16 sequences it passes over at the default budget a template the
    served cost model would have kept, as the selector decides (the model's scores are gaps to
    ATen; one slot is the nearest measured shape's pick). Which tile is slow to compile depends
    on the model served, so the test names none."""
    from kselect.kernels.problem import Problem
    from kselect.kernels.triton.space import triton_space
    from kselect.selector.decide.gap_policy import nearest_candidates
    from kselect.selector.decide.policy import choose_kept

    fingerprint = served[0]
    problem = Problem(16, 128256, 4096, "bf16", "nt")
    cands = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
    sel = ksi.Selector("verify")
    price = sel.pricing.price(fingerprint, problem, cands)
    assert price is not None, f"no compile-cost model for sm {fingerprint.get('compute_capability')}"
    ranker = sel.ranker_for(fingerprint)
    scores = ranker.rank(problem, cands)
    nearest = nearest_candidates(ranker, "verify", problem, cands)

    def kept_set(compile_price):
        return choose_kept(
            cands,
            scores,
            "verify",
            4,
            True,
            False,
            compile_price=compile_price,
            aten_gap=ranker.aten_gap_scores,
            nearest=nearest,
        )

    unpriced, _ = kept_set(None)
    kept, why = kept_set(price)
    # which tile the price passes over depends on the served model; that one is passed over does
    # not. A template the price takes in instead may itself be slow to compile and passed over
    # too (on the H200's model the nearest shape's slot passed over two), so of the passed ones
    # at least one, not all, is a template the unpriced set kept
    assert price.passed, (ranker.ident, why)
    assert not set(price.passed) & set(kept), (ranker.ident, why)
    assert set(price.passed) & set(unpriced), (ranker.ident, unpriced, why)
    assert set(kept) != set(unpriced), (ranker.ident, unpriced, why)


def test_verify_measurement_leaves_no_memory_behind(verify_own):
    """After each measurement the cuBLAS workspace of its stream and its operands' cached blocks
    are given back: the program runs without them (release_memory, the default)."""
    assert verify_own.selector.measurements, "kselect measured no kept set"
    for m in verify_own.selector.measurements:
        mem = m["memory_mb"]
        assert mem["released"] and mem["allocated_after"] <= mem["allocated_before"] + 0.01, m


def test_verify_own_timing_was_exercised(verify_own):
    """The per-GEMM checks of kselect's own timing are vacuous where a kept set was one choice,
    so at least one GEMM must have had a set of two or more timed, with a winner.

    Fails on the same mutation as test_verify_really_benchmarked (verify keeping one choice)."""
    timed = [m for m in verify_own.selector.measurements if len(m["ms"]) > 1]
    assert timed, "every kept set was one choice: kselect's own verify timing was not exercised\n" + "\n".join(
        verify_own.describe(g.key) for g in GEMMS.values()
    )
    assert all(m["winner"] in m["ms"] for m in timed), timed


def test_verify_records_the_price_beside_the_measured_compiles(verify_own):
    """Every measured set with templates carries the compile-cost model's prediction for each
    template it compiled, so each GPU run also checks the price against the compiles."""
    with_templates = [m for m in verify_own.selector.measurements if (m.get("compiles") or {}).get("per_choice")]
    assert with_templates, [m["problem"] for m in verify_own.selector.measurements]
    for m in with_templates:
        assert set(m["compiles"]["per_choice"]) <= set(m["predicted_compile_ms"]), m
        assert all(v > 0 for v in m["predicted_compile_ms"].values())


@pytest.mark.parametrize("name", list(GEMMS))
def test_verify_own_recompile_measures_nothing(verify_own_again, operands, name):
    res = verify_own_again
    assert res.stats["decisions"] == 0 and res.stats["measured"] == 0, res.stats
    assert not res.benchmarked(GEMMS[name].key), res.describe(GEMMS[name].key)
    _check_outputs(res, operands, name)


# ---------------------------------------------------------------------------------------
# a GEMM feeding pointwise ops (decode-sized x @ W^T -> relu * r): with epilogue_fusion, verify
# hands Inductor the epilogue's few (a fusing template + ATen, decide/policy.py's with_fusing_few),
# Inductor's scheduler benchmarks the template fused with the epilogue against ATen + a separate
# kernel, and its pick is cached (compat/multi_template.py): the recompile benchmarks nothing
EPILOGUE_KEY = "mm:8x4096x4096:bf16:nt"
FUSION_BENCHMARK = re.compile(r"fuse \(benchmark\)")  # the scheduler's fusion log: "can/cannot fuse (benchmark)"


def _with_epilogue(x, w, r):
    return torch.relu(x @ w.t()) * r


class FusionLog(logging.Handler):
    """Inductor's own fusion log (TORCH_LOGS=fusion), its benchmark lines."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list = []

    def emit(self, record):
        msg = record.getMessage()
        if FUSION_BENCHMARK.search(msg):
            self.lines.append(msg)


def _compile_with_epilogue(harness, cache_dir: Path):
    g = torch.Generator(device="cuda").manual_seed(2)
    args = (
        _randn(g, torch.bfloat16, 8, 4096),
        _randn(g, torch.bfloat16, 4096, 4096),
        _randn(g, torch.bfloat16, 8, 4096),
    )
    fusion = FusionLog()
    logger = logging.getLogger("torch._inductor.scheduler.__fusion")
    torch._logging.set_logs(fusion=True)
    logger.addHandler(fusion)
    try:
        res = harness.compile("verify", _with_epilogue, args, k=K, epilogue_fusion=True, cache_dir=cache_dir)
    finally:
        logger.removeHandler(fusion)
        torch._logging.set_logs()
    return res, _with_epilogue(*[t.float() for t in args]), fusion.lines


@pytest.fixture(scope="module")
def epilogue_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("epilogue-decisions")


@pytest.fixture(scope="module")
def epilogue_first(harness, epilogue_dir):
    return _compile_with_epilogue(harness, epilogue_dir)


@pytest.fixture(scope="module")
def epilogue_again(harness, epilogue_dir, epilogue_first):
    return _compile_with_epilogue(harness, epilogue_dir)


def test_verify_hands_inductor_the_epilogues_few(epilogue_first):
    res, want, fusion_lines = epilogue_first
    assert res.warnings == [] and res.stats["fallbacks"] == 0, (res.warnings, res.stats)
    choices = [kept for stage, _, kept in res.decisions(EPILOGUE_KEY) if stage == "choices"]
    assert choices, res.describe(EPILOGUE_KEY)
    kept = choices[-1]
    assert len(kept) >= 2 and any(k.startswith("aten:") for k in kept), kept
    assert any(k.startswith(("triton:mm", "triton:persistent_tma")) for k in kept), kept
    # kselect timed nothing itself: Inductor benchmarked the few, then its scheduler the fused kernel
    assert not _own_measurements(res, EPILOGUE_KEY), res.selector.measurements
    assert res.benchmarked(EPILOGUE_KEY), res.describe(EPILOGUE_KEY)
    assert fusion_lines, "Inductor's epilogue-fusion benchmark did not run"
    assert res.stats["verified"] >= 1, res.stats  # the scheduler's pick was recorded
    got = res.outputs[0]
    assert got.dtype == torch.bfloat16 and relative_error(got, want) < TOL


def test_the_fusion_pick_is_cached_and_the_recompile_benchmarks_nothing(epilogue_first, epilogue_again):
    res, want, fusion_lines = epilogue_again
    assert res.stats["decisions"] == 0 and res.stats["cache_hits"] >= 1, res.stats
    assert not res.benchmarked(EPILOGUE_KEY) and fusion_lines == [], res.describe(EPILOGUE_KEY)
    hits = res.hits(EPILOGUE_KEY)  # the templates stage's (the choices stage then sees one choice)
    assert hits and all(len(kept) == 1 for _, kept in hits), res.describe(EPILOGUE_KEY)
    assert relative_error(res.outputs[0], want) < TOL


# ---------------------------------------------------------------------------------------
# the early decision (default): decided over kselect's own enumeration before Inductor generates
# its choices; the same compile deciding over Inductor's generated choices must agree
@pytest.fixture(scope="module")
def predict_late(harness, operands):
    return harness.compile("predict", four_gemms, operands[0], early_decision=False)


def _template_decisions(res: Compiled, key: str) -> list:
    return [d for d in res.selector.decisions if d["problem"] == key and d["stage"] == "templates"]


@pytest.mark.parametrize("name", list(GEMMS))
def test_early_decision_equals_deciding_over_inductors_choices(predict, predict_late, operands, name):
    key = GEMMS[name].key
    early, late = _template_decisions(predict, key), _template_decisions(predict_late, key)
    assert early and all(d["early"] for d in early), (key, early)
    assert late and not any(d["early"] for d in late), (key, late)
    # the same space (as many candidates enumerated as Inductor generated) and the same pick
    assert [(d["seen"], d["kept"]) for d in early] == [(d["seen"], d["kept"]) for d in late], (early, late)
    assert predict.warnings == [] and predict.stats["fallbacks"] == 0, (predict.warnings, predict.stats)
    _check_outputs(predict_late, operands, name)


DECOMPOSE_K_KEY = "mm:64x64x65536:bf16:nn"  # K >= 32 * M and 32 * N: Inductor adds decompose-k


def test_decompose_k_gemm_decides_early_and_late_alike(harness):
    g = torch.Generator(device="cuda").manual_seed(3)
    a, b = _randn(g, torch.bfloat16, 64, 65536), _randn(g, torch.bfloat16, 65536, 64)
    seen = {}
    for early in (True, False):
        res = harness.compile("predict", torch.mm, (a, b), early_decision=early)
        dec = _template_decisions(res, DECOMPOSE_K_KEY)
        assert dec and all(d["early"] is early for d in dec), (res.log, list(res.selector.decisions))
        assert res.warnings == [] and res.stats["fallbacks"] == 0, (res.warnings, res.stats)
        assert relative_error(res.outputs[0], a.float() @ b.float()) < TOL
        seen[early] = [(d["seen"], d["kept"]) for d in dec]
    assert seen[True] == seen[False], seen


# ---------------------------------------------------------------------------------------
# fp32: the shipped model has bf16 data only -> stock Inductor in the user's space, told once
# (selector/ops/gate.py: refused before any widened list is built, not a fallback)
def test_fp32_mm_goes_to_stock_untouched_and_is_told_once(fp32):
    res, want = fp32
    assert res.warnings == [], res.warnings
    assert res.log.count("kselect: fp32 mm is not modelled; stock autotuning") == 1, res.log
    assert res.stats["decisions"] == 0 and res.stats["fallbacks"] == 0, res.stats
    # stock autotuning: Inductor compared every choice (ATen + Triton configs) itself
    assert max((len(r) for r in res.timed(FP32_KEY)), default=0) >= 2, (FP32_KEY, [k for k, _ in res.runs])
    got = res.outputs[0]
    assert got.dtype == torch.float32 and relative_error(got, want.float()) < TOL


# ---------------------------------------------------------------------------------------
# fp16 and TF32: decided by the card's shipped model of those dtypes (hopper-fp16-tf32 on sm_90),
# joined to the bf16 model that serves the card (selector/model/discovery.py dtype_models)
OTHER_DTYPES = {
    "fp16": (torch.float16, "mm:16x16384x8192:fp16:nt"),
    "tf32": (torch.float32, "mm:16x16384x8192:tf32:nt"),
}


@pytest.fixture(scope="module")
def other_dtypes(harness, served, tmp_path_factory):
    """{dtype: (verify compile, fp32 reference, its model's ranker ident)} of one skinny mm per
    dtype a joined model decides on this card; TF32 under set_float32_matmul_precision("high")."""
    from kselect.selector.model.discovery import dtype_models
    from kselect.selector.model.held_ops import held_dtypes

    fingerprint, model = served
    joined = dtype_models(fingerprint, held_dtypes(model.metadata_))
    g = torch.Generator(device="cuda").manual_seed(2)
    out = {}
    for dtype, (torch_dtype, _) in OTHER_DTYPES.items():
        if dtype not in joined:
            continue
        x, w = _randn(g, torch_dtype, 16, 8192), _randn(g, torch_dtype, 16384, 8192)
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high" if dtype == "tf32" else before)
        cache = tmp_path_factory.mktemp(f"decisions-{dtype}")
        try:
            res = harness.compile("verify", lambda x, w: x @ w.t(), (x, w), k=K, cache_dir=cache)
        finally:
            torch.set_float32_matmul_precision(before)
        res.cache_files = _cache_files(cache)
        out[dtype] = (res, x.float() @ w.float().t(), CostModelRanker(joined[dtype], fingerprint).ident)
    return out


@pytest.mark.parametrize("dtype", list(OTHER_DTYPES))
def test_fp16_and_tf32_are_decided_by_the_cards_model_of_that_dtype(other_dtypes, dtype):
    """Fails if no shipped model decides the dtype on this card (a Hopper card has one), if the
    GEMM goes stock or falls back, or if its decision was keyed to another model's trees."""
    assert dtype in other_dtypes, f"no shipped model decides {dtype} on this card"
    res, want, ident = other_dtypes[dtype]
    key = OTHER_DTYPES[dtype][1]
    assert res.warnings == [] and res.stats["fallbacks"] == 0, (res.warnings, res.stats)
    assert res.decisions(key), (key, res.log[-20:])
    rankers = {f.get("key_fields", {}).get("ranker") for f in res.cache_files}
    assert ident in rankers, (ident, rankers)
    assert max((len(r) for r in res.timed(key)), default=0) <= K + 1, res.describe(key)
    got = res.outputs[0]
    assert got.dtype == OTHER_DTYPES[dtype][0] and relative_error(got.float(), want) < TOL


# ---------------------------------------------------------------------------------------
class GpuSelectorReport(UserWarning):
    """Information, not a problem: what the hooks did on this GPU / torch."""


def test_report_what_the_hooks_did(
    predict, verify_first, verify_again, verify_own, verify_own_again, fp32, epilogue_first
):
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    import triton

    lines = [
        f"{props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, triton {triton.__version__}"
    ]
    for title, res in (
        ("predict", predict),
        (f"verify k={K}, Inductor timing", verify_first),
        ("verify again", verify_again),
        (f"verify k={K}, kselect timing", verify_own),
        ("verify (kselect timing) again", verify_own_again),
        ("verify, GEMM with a pointwise epilogue (its few handed to Inductor)", epilogue_first[0]),
    ):
        lines.append(f"[{title}] {res.seconds:.1f} s, stats {res.stats}")
        lines += ["  " + res.describe(g.key) for g in GEMMS.values()]
        lines += [
            f"  kselect measured {m['problem']}: {m['ms']} -> {m['winner']} ({m['wall_ms']:.0f} ms)"
            for m in res.selector.measurements
        ]
    lines.append(
        f"[fp32 predict] {fp32[0].seconds:.1f} s, stats {fp32[0].stats}, warnings {fp32[0].warnings}, "
        f"benchmarked {[len(r) for r in fp32[0].timed(FP32_KEY)]} choices"
    )
    stages = {g.key: sorted({s for s, _, _ in predict.decisions(g.key)}) for g in GEMMS.values()}
    lines.append(f"stages that decided in predict mode: {stages}")
    path = os.environ.get("KSELECT_GPU_REPORT")
    if path:
        Path(path).write_text(
            json.dumps(
                {
                    "summary": lines,
                    "predict": predict.to_json(),
                    "verify_first": verify_first.to_json(),
                    "verify_again": verify_again.to_json(),
                    "verify_own": {**verify_own.to_json(), "measurements": list(verify_own.selector.measurements)},
                    "verify_own_again": verify_own_again.to_json(),
                    "fp32": fp32[0].to_json(),
                    "epilogue_first": {
                        **epilogue_first[0].to_json(),
                        "measurements": list(epilogue_first[0].selector.measurements),
                    },
                },
                indent=1,
                default=str,
            )
        )
    warnings.warn("\n".join(lines), GpuSelectorReport)
    assert all(stages.values())
