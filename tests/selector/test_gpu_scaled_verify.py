"""On an sm_90 GPU: an fp8 `_scaled_mm` that kselect's ranker holds is decided under verify like
a bf16 GEMM. A quick collection measures the GEMM's candidates (ATen and a sample of the scaled
Triton templates); a MeasuredRanker over that table serves a max-autotune compile in verify
mode. The compiled output matches ATen's within 2e-2, nothing falls back, and only the kept set
is measured -- by kselect's own timing, and by Inductor's benchmark if it runs at all."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from kselect.kernels import Problem  # noqa: E402
from kselect.kernels.operands import relative_error  # noqa: E402
from kselect.selector.compat import choice_candidates  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

needs_sm90 = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0), reason="needs an sm_90+ GPU"
)
M, N, K = 128, 4096, 4096
PROBLEM = Problem(M, N, K, "fp8e4m3", "nt", "scaled_mm", scaling="rowwise", out_dtype="bf16")


def scaled(a, b, sa, sb):
    return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)


def measured_table(root) -> dict:
    """{problem key: {candidate key: ms}} of a quick collection of PROBLEM on GPU 0."""
    from kselect.training.data.dataset import DatasetDir
    from kselect.training.measure.collect import collect

    result = collect([PROBLEM], root, backends=("aten", "triton"), space="sample:24", gpus=[0])
    assert result["ok"], result
    df = DatasetDir(root).load()
    ok = df[(df["status"] == "ok") & (df["problem_key"] == PROBLEM.key)]
    assert "aten:scaled_mm" in set(ok["candidate_key"]) and (ok["backend"] == "triton").sum() >= 4, ok
    return {PROBLEM.key: dict(zip(ok["candidate_key"], ok["time_ms"].astype(float)))}


class Benchmarks:
    """Inductor's feedback saver: the candidates of every benchmark it ran of a scaled_mm."""

    def __init__(self):
        self.runs: list = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        if len(input_nodes) == 4 and "scaled" in str(name):
            self.runs.append({choice_candidates.caller_candidate(c).key for c in dict(timings)})


@needs_sm90
def test_verify_decides_a_held_scaled_mm_and_measures_only_the_kept_set(tmp_path):
    ranker = MeasuredRanker(measured_table(tmp_path / "data"))
    assert ranker.ops == {"scaled_mm"} and ranker.scalings == {"rowwise"}
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn).t()  # column-major B
    sa = torch.rand(M, 1, device="cuda", generator=g) + 0.5
    sb = torch.rand(1, N, device="cuda", generator=g) + 0.5
    want = scaled(a, b, sa, sb)
    bench = Benchmarks()
    with warnings.catch_warnings(record=True) as caught, inductor_sandbox(tmp_path, bench):
        warnings.simplefilter("always")
        sel = ksi.enable("verify", ranker=ranker, k=2, cache_dir=None)
        torch._dynamo.reset()
        got = torch.compile(scaled)(a, b, sa, sb)
        torch.cuda.synchronize()
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert not fallbacks and sel.stats["fallbacks"] == 0, (fallbacks, sel.stats)
    assert relative_error(got, want) <= 2e-2
    decided = [d for d in sel.decisions if d["problem"] == PROBLEM.key]
    assert decided, list(sel.decisions)
    kept = set().union(*(d["kept"] for d in decided))
    assert len(kept) <= 3 and all(len(d["kept"]) <= 3 for d in decided)  # k=2 and the ATen safety net
    measured = [m for m in sel.measurements if m["problem"] == PROBLEM.key]
    for m in measured:
        assert set(m["ms"]) <= kept, (m["ms"], kept)
    for run in bench.runs:  # Inductor benchmarks a kept set only, if anything
        assert run <= kept, (run, kept)
    assert measured or bench.runs or len(kept) == 1, "verify measured nothing of a kept set of several"
