"""The selector decides on the committed data exactly as its golden record says.

The record (golden/decisions-h200-bf16.json) holds what the selector kept for a fixed list of
GEMMs -- shapes of data/h200-bf16 and data/shapes/ -- ranked by the shipped models/h200-bf16
model on its own card (the fingerprint is the model's: this CPU ranks as the H200 would, with
the ATen-kernel columns missing, as wherever no probe can run). It covers:

- predict as shipped: the card's measured picks (models/picks/h200.json) where the card's
  datasets or bench runs hold the GEMM, the model elsewhere;
- predict and verify over kselect's enumeration of each GEMM's space (the boundary's
  `template_candidates`), with the shipped model's gap scores, the same scores read as plain
  ranking scores (the adaptive-k and prefer-ATen rules), and the measured times of
  data/h200-bf16 (log-time scores); settings that change the kept set (k, min_k, adaptive_k,
  keep_aten, aten_margin, compile_budget), the epilogue rule and unscored FlyDSL candidates;
- a dynamic M: the picks per size at kselect's sizes and at Inductor's own per-size choices,
  narrowed to a stock size;
- verify's round: the templates stage, its choices stage over the set as planned, the
  measured winner (data/h200-bf16's times) cached, and every decision-cache key written.

A change that moves code must leave every byte of it alike. A change meant to alter
decisions rewrites the record, and its diff shows which decisions moved:
    .venv/bin/python tests/selector/test_decisions_identical.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available() or torch.__version__.startswith("2.11"),
    reason="recorded on the CPU (no ATen probe) under torch 2.13 (2.11 never keeps bf16 decompose-k)",
)

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden") / "decisions-h200-bf16.json"
DATA = REPO / "data" / "h200-bf16" / "measurements.parquet"

# data/shapes/ rows beyond the dataset's exhaustively measured shapes: nn layouts, odd sizes
SHAPE_ROWS = (
    ("h200-bf16-bench.csv", (5, 11, 12, 23)),
    ("h200-bf16-unaligned.csv", (0, 3)),
)
# the dataset's exhaustively measured shapes (sorted by key): every EVERY-th
EVERY = 9
DYNAMIC = 4  # how many of the shapes also decide as GEMMs with a dynamic M
STOCK_SIZE = 6  # the stock space a dynamic GEMM's union is narrowed to


def _problems():
    from kselect.kernels.problem import Problem

    frame = pd.read_parquet(DATA, columns=["problem_key", "M", "N", "K", "layout", "space"])
    shapes = frame[frame.space == "exhaustive"].drop_duplicates("problem_key").sort_values("problem_key")
    out = [Problem(int(r.M), int(r.N), int(r.K), "bf16", r.layout) for r in shapes.iloc[::EVERY].itertuples()]
    for name, rows in SHAPE_ROWS:
        table = pd.read_csv(REPO / "data" / "shapes" / name)
        out += [Problem(int(r.M), int(r.N), int(r.K), "bf16", r.layout) for r in table.iloc[list(rows)].itertuples()]
    first = out[0]
    out.append(Problem(first.M, first.N, first.K, "bf16", first.layout, op="addmm"))
    out.append(Problem(64, 1024, 512, "bf16", "nn", op="bmm", batch=8))
    return out


def _measured() -> dict:
    """{problem key: {candidate key: ms}} of data/h200-bf16's successful measurements."""
    frame = pd.read_parquet(DATA, columns=["problem_key", "candidate_key", "status", "time_ms"])
    frame = frame[frame.status == "ok"]
    table: dict = {}
    for p, c, ms in zip(frame.problem_key, frame.candidate_key, frame.time_ms):
        row = table.setdefault(p, {})
        row[c] = min(float(ms), row.get(c, float("inf")))
    return table


def _space(problem):
    """kselect's enumeration of the GEMM's EXHAUSTIVE space, over Inductor's template objects."""
    from torch._inductor.kernel import bmm as inductor_bmm
    from torch._inductor.kernel import mm as inductor_mm

    from kselect.selector.compat import enumeration

    if problem.op == "bmm":
        templates = (inductor_bmm.aten_bmm, inductor_bmm.bmm_template)
    else:
        aten = inductor_mm.aten_addmm if problem.op == "addmm" else inductor_mm.aten_mm
        templates = (
            aten,
            inductor_mm.mm_template,
            inductor_mm.persistent_tma_mm_template,
            inductor_mm.decompose_k_subgraph_template,
        )
    return enumeration.template_candidates(problem, templates, "EXHAUSTIVE")


def _fields(problem, **more) -> dict:
    return {"op": problem.op, "out": [problem.M, problem.N], "layout": problem.layout, **more}


class _RankingScores:
    """The shipped model's scores read as plain ranking scores (no gap to ATen, no time unit):
    the adaptive-k spread and the prefer-ATen margin decide."""

    log_time_scores = False

    def __init__(self, inner):
        self.inner, self.ident, self.backends = inner, "ranking:" + inner.ident, inner.backends

    def rank(self, problem, candidates):
        return self.inner.rank(problem, candidates)


class _Ktc:
    """What the boundary reads of a KernelTemplateChoice: its template's uid and its knobs."""

    def __init__(self, cand):
        uid = f"aten::{cand.template}" if cand.backend == "aten" else f"triton::{cand.template}"
        self.template = SimpleNamespace(uid=uid)
        self.params = SimpleNamespace(kwargs=dict(cand.kwargs), to_kwargs=lambda: dict(cand.kwargs))


class _Choice:
    """A KTC-backed ChoiceCaller (`annotations["ktc"]`), as Inductor benchmarks it."""

    def __init__(self, cand):
        self.annotations = {"ktc": _Ktc(cand)}


def _decide(sel, problem, fingerprint, cands, **kw) -> dict:
    kept, _ = sel.select("templates", problem, _fields(problem), fingerprint, cands, **kw)
    return {"kept": [cands[i].key for i in kept], "why": sel.decisions[-1]["why"]}


def _per_size(sel, problem, fingerprint, cands, by_inductor: bool) -> dict:
    """A dynamic M: kselect's sizes over one list, or Inductor's per-size choices (the same
    candidates generated again at each hint)."""
    if by_inductor:
        hints = (None, 64, 1024)
        items = [SimpleNamespace(hint_override=h) for h in hints for _ in cands]
        cands = tuple(cands) * len(hints)
    else:
        items = list(cands)
    fields = _fields(problem, dynamic=["M"])
    kept, _ = sel._select_per_size(
        "templates", problem, fields, fingerprint, cands, items, stock_size=lambda: STOCK_SIZE
    )
    picks = sel.dynamic_picks[-1]
    return {
        "kept": [f"{i}:{cands[i].key}" for i in kept],
        "per_size": {str(m): keys for m, keys in picks["per_size"].items()},
    }


def _verify_round(sel, problem, fingerprint, cands, measured: dict) -> dict:
    """verify as the hook runs it for one GEMM: the templates stage decides and awaits the
    benchmark, the choices stage takes that set as planned, Inductor's timings (the dataset's)
    settle the winner, which is cached for both stages."""
    fields = _fields(problem)
    kept_t, entry_t = sel.select("templates", problem, fields, fingerprint, cands)
    planned = [cands[i] for i in kept_t]
    choices = [_Choice(c) for c in planned]
    sel._await_verification("templates", problem.key, (*entry_t, False), choices)
    as_planned = sel._planned_covers(problem, planned)
    kept_c, entry_c = sel.select("choices", problem, fields, fingerprint, planned, as_planned=as_planned)
    out = [choices[i] for i in kept_c]
    sel._await_verification("choices", problem.key, (*entry_c, False), out)
    row = measured.get(problem.key, {})
    timings = {ch: row.get(c.key, float("inf")) for ch, c in zip(out, (planned[i] for i in kept_c))}
    sel.record_verified(out, timings, "cuda")
    return {
        "templates": [c.key for c in planned],
        "as_planned": as_planned,
        "choices": [planned[i].key for i in kept_c],
        "why": sel.decisions[-1]["why"],
    }


def _cache_files(root: Path) -> dict:
    """{decision key: [kept, verified]} of every decision-cache file under `root`."""
    out = {}
    for path in sorted(root.rglob("*.json")):
        data = json.loads(path.read_text())
        out[path.stem] = [data["kept"], bool(data["key_fields"].get("verified"))]
    return out


def decisions(cache_root: Path) -> dict:
    """Every decision the record holds, as JSON-ready data."""
    from kselect.kernels.flydsl import space as flydsl_space
    from kselect.kernels.problem import Problem
    from kselect.models import shipped_model_path
    from kselect.selector.decide.rankers import MeasuredRanker
    from kselect.selector.inductor.hook import Selector

    fingerprint = {**json.loads(shipped_model_path("h200-bf16.meta.json").read_text())["fingerprint"]}
    fingerprint["device_type"] = "cuda"
    problems = _problems()
    measured = _measured()
    table = {p.key: measured[p.key] for p in problems if p.key in measured}
    model = {  # the shipped model, found by the fingerprint as enable() finds it
        "predict": Selector("predict", measured_picks=False),  # the model's own picks
        "verify": Selector("verify"),
        "verify k=2 min_k=2 unpriced": Selector("verify", k=2, min_k=2, compile_budget=0),
        "verify fixed k=3 no ATen": Selector("verify", k=3, adaptive_k=False, keep_aten=False),
    }
    measured_picks = Selector("predict")
    shipped = model["predict"].ranker_for(fingerprint)
    ranking = _RankingScores(shipped)
    scores = {
        "predict": Selector("predict", ranker=ranking),
        "predict aten_margin=0": Selector("predict", ranker=ranking, aten_margin=0.0),
        "verify": Selector("verify", ranker=ranking),
        "verify k=4 min_k=2": Selector("verify", ranker=ranking, k=4, min_k=2),
        "verify k=12": Selector("verify", ranker=ranking, k=12),
        "verify fixed k=3": Selector("verify", ranker=ranking, adaptive_k=False, k=3),
    }
    times = {
        "predict": Selector("predict", ranker=MeasuredRanker(table)),
        "verify k=3": Selector("verify", k=3, ranker=MeasuredRanker(table)),
    }
    # five FlyDSL candidates joining each mm/addmm list (which is only for the ranker to ignore)
    flydsl = tuple(flydsl_space.candidates(Problem(256, 256, 256, "bf16", "nt"), "gfx942", "default")[:5])
    cached = Selector("verify", k=3, min_k=2, cache_dir=str(cache_root))
    record: dict = {"fingerprint_id": fingerprint["fingerprint_id"], "ranker": shipped.ident, "problems": {}}
    for n, problem in enumerate(problems):
        cands = _space(problem)
        got: dict = {"space": len(cands)}
        got["model"] = {name: _decide(sel, problem, fingerprint, cands) for name, sel in model.items()}
        got["model"]["verify epilogue"] = _decide(model["verify"], problem, fingerprint, cands, epilogue=True)
        # predict as shipped: the card's measured picks (models/picks) where its datasets or bench runs hold the GEMM
        got["model"]["predict, measured picks"] = _decide(measured_picks, problem, fingerprint, cands)
        got["ranking"] = {name: _decide(sel, problem, fingerprint, cands) for name, sel in scores.items()}
        got["ranking"]["verify epilogue"] = _decide(scores["verify"], problem, fingerprint, cands, epilogue=True)
        if problem.op != "bmm":  # FlyDSL joins mm/addmm; neither ranker has data for it
            joined = tuple(cands) + flydsl
            got["ranking"]["verify with FlyDSL"] = _decide(scores["verify"], problem, fingerprint, joined)
            got["model"]["predict with FlyDSL"] = _decide(model["predict"], problem, fingerprint, joined)
        if problem.key in table:
            got["measured"] = {name: _decide(sel, problem, fingerprint, cands) for name, sel in times.items()}
        if n < DYNAMIC:
            got["dynamic M"] = {
                f"{mode} {how}": _per_size(model[mode], problem, fingerprint, cands, how == "Inductor's sizes")
                for mode in ("predict", "verify")
                for how in ("kselect's sizes", "Inductor's sizes")
            }
        got["verify round"] = _verify_round(cached, problem, fingerprint, cands, measured)
        record["problems"][problem.key] = got
    cached.cache.flush()
    record["cache"] = _cache_files(cache_root)
    return json.loads(json.dumps(record))  # as the file reads back: int keys as strings, tuples as lists


def test_decisions_match_the_golden_record(tmp_path):
    want = json.loads(GOLDEN.read_text())
    got = decisions(tmp_path / "cache")
    assert got.keys() == want.keys()
    for key in ("fingerprint_id", "ranker", "cache"):
        assert got[key] == want[key], key
    assert list(got["problems"]) == list(want["problems"])
    for problem, decided in want["problems"].items():
        assert got["problems"][problem] == decided, problem


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(decisions(Path(tmp) / "cache"), indent=1) + "\n")
    print(f"wrote {GOLDEN.relative_to(REPO)}")
