"""Dynamic shapes under kselect: real max-autotune compiles on the CPU (torch.compile(dynamic=True)
on a frozen Linear, `mark_dynamic` on a bmm's M), the per-size picks, and the narrowing of a GEMM
kselect cannot decide back to the user's own search space.

On the CPU each GEMM has two choices (ATen/MKL and the C++ micro-GEMM template); the ranker is a
MeasuredRanker over tables keyed by the problem at each ranked size, built from the candidates the
stock compile benchmarked. Inductor's own feedback saver counts what it benchmarks.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.compat import choice_candidates, signatures, template_configs  # noqa: E402
from kselect.selector.decide import dynamic_sizes  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker, RankerUnavailable  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.warn import KselectFallbackWarning, reset_warnings  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from test_early_decision import cuda_inputs, inductor_candidates, lowering  # noqa: E402

HINT = 64  # the first call's M: the size Inductor compiles and benchmarks at


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(96, 80)

    def forward(self, x):
        return self.lin(x)


def _bmm(a, b):
    return torch.bmm(a, b)


class Benchmarks:
    """Inductor's feedback saver: one entry per autotune that benchmarked, with its choices."""

    def __init__(self):
        self.runs: list = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        # read during the compile: symbolic sizes have hints only while its graph is lowered
        ops = {"linear_unary": "addmm", "bmm": "bmm4x"}  # Inductor's names of the two GEMMs
        try:
            problem = signatures.choices_signature(list(choices))[0].key
        except ValueError:  # unreadable: named as Inductor names it
            problem = f"{ops.get(name, name)}:unread"
        self.runs.append((problem, [choice_candidates.caller_candidate(c).key for c in choices]))


@pytest.fixture(scope="module")
def inductor(tmp_path_factory):
    with inductor_sandbox(tmp_path_factory.mktemp("inductor"), Benchmarks(), freezing=True) as bench:
        yield bench


def compile_dynamic(bench: Benchmarks) -> list[list]:
    """A dynamic-M Linear and a mark_dynamic bmm, each compiled once and run at three M (no
    recompile); outputs checked against eager. Returns the choices Inductor benchmarked."""
    bench.runs.clear()
    torch._dynamo.reset()
    torch.manual_seed(0)
    lin = Linear().eval()
    g = torch.Generator().manual_seed(1)
    b = torch.randn(4, 96, 80, generator=g)
    with torch.no_grad():
        compiled = torch.compile(lin, dynamic=True)
        bmm = torch.compile(_bmm)
        for m in (HINT, 33, 200):
            x = torch.randn(m, 96, generator=g)
            torch.testing.assert_close(compiled(x), lin(x))
            a = torch.randn(4, m, 96, generator=g)
            torch._dynamo.mark_dynamic(a, 1)
            torch.testing.assert_close(bmm(a, b), torch.bmm(a, b))
    return list(bench.runs)


@pytest.fixture(scope="module")
def stock(inductor):
    """The stock compile: the choices Inductor benchmarks per GEMM (the user's own list), as keys."""
    ksi.disable()
    runs = compile_dynamic(inductor)
    return {problem.split(":", 1)[0]: keys for problem, keys in runs}


def _table(stock_keys: dict, prefer) -> dict:
    """{problem key at each size: {candidate key: ms}}: `prefer(m)` ('aten' or 'cpp') is faster at M=m."""
    shapes = {"addmm": "addmm:{m}x80x96:fp32:nn", "bmm4x": "bmm4x:{m}x80x96:fp32:nn"}
    table = {}
    for op, keys in stock_keys.items():
        for m in (HINT, 16, 32, 256, 512, 1024, 4096):
            table[shapes[op].format(m=m)] = {k: (1.0 if k.startswith(prefer(m)) else 2.0) for k in keys}
    return table


def _no_fallback_compile(bench):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = compile_dynamic(bench)
    ours = [str(w.message) for w in caught if issubclass(w.category, KselectFallbackWarning)]
    assert not ours, ours
    return runs


@pytest.mark.slow
def test_stock_dynamic_compile_tunes_two_choices_per_gemm(stock):
    assert set(stock) == {"addmm", "bmm4x"} and all(len(v) == 2 for v in stock.values())


def test_predict_decides_dynamic_gemms_at_every_size_and_benchmarks_nothing(stock, inductor):
    """Every size agrees: one choice kept per GEMM, so Inductor benchmarks nothing; the picks
    were ranked at the compile's hint and at each of kselect's own M sizes."""
    sel = ksi.enable("predict", ranker=MeasuredRanker(_table(stock, lambda m: "cpp")))
    runs = _no_fallback_compile(inductor)
    assert runs == []
    assert sel.stats["fallbacks"] == 0
    picks = list(sel.dynamic_picks)
    assert sorted(p["problem"] for p in picks) == ["addmm:64x80x96:fp32:nn", "bmm4x:64x80x96:fp32:nn"]
    for p in picks:
        assert list(p["per_size"]) == [HINT] + [s for s in dynamic_sizes.DYNAMIC_M_SIZES if s != HINT]
        assert len(p["kept"]) == 1 and p["kept"][0].startswith("cpp:") and not p["by_inductor_size"]


def test_per_size_picks_that_differ_are_kept_together_within_the_stock_list(stock, inductor):
    """Inductor's multi_kernel_hints set the sizes; ATen wins small M, the C++ template large M:
    each GEMM keeps both picks (the union), which Inductor's autotune chooses between, and never
    more than the user's own list."""
    sel = ksi.enable("predict", ranker=MeasuredRanker(_table(stock, lambda m: "aten" if m <= 32 else "cpp")))
    with torch._inductor.config.patch(multi_kernel_hints=[32, 512]):
        runs = _no_fallback_compile(inductor)
    picks = {p["problem"].split(":", 1)[0]: p for p in sel.dynamic_picks}
    assert set(picks) == {"addmm", "bmm4x"}
    for op, p in picks.items():
        assert list(p["per_size"]) == [HINT, 32, 512]
        assert p["per_size"][32][0].startswith("aten:") and p["per_size"][HINT][0].startswith("cpp:")
        assert sorted(p["kept"]) == sorted(stock[op])  # the union: both, no more than stock
    assert sorted(len(keys) for _, keys in runs) == [2, 2]  # Inductor benchmarked the kept pairs


def test_verify_decides_dynamic_gemms_within_the_stock_list(stock, inductor):
    sel = ksi.enable("verify", k=1, keep_aten=False, ranker=MeasuredRanker(_table(stock, lambda m: "cpp")))
    runs = _no_fallback_compile(inductor)
    assert runs == [] and sel.stats["fallbacks"] == 0  # one pick kept: nothing to measure
    assert all(len(p["kept"]) <= len(stock[p["problem"].split(":", 1)[0]]) for p in sel.dynamic_picks)


class _BlockForSize:
    """Scores a Triton tile by how far its BLOCK_M is from the problem's M (ATen last)."""

    log_time_scores = False
    ident = "block-for-size"

    def rank(self, problem, candidates):
        return np.array(
            [
                abs(math.log2(c.kwargs["BLOCK_M"]) - math.log2(min(problem.M, 128))) if c.backend == "triton" else 99.0
                for c in candidates
            ]
        )


def test_choices_inductor_built_per_size_are_decided_at_their_size():
    """Under multi-kernel dispatch Inductor builds a GEMM's Triton configs once per hint size
    (each KTC carries its `hint_override`): each size's configs are decided at that size."""
    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    def ktc(block_m, hint):
        kw = dict(BLOCK_M=block_m, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_stages=3, num_warps=4, hint_override=hint)
        return KernelTemplateChoice(mm_template, DictKernelTemplateParams(kw), {}, None, None)

    ktcs = [ktc(bm, hint) for hint in (None, 512) for bm in (16, 32, 64, 128)]
    assert [choice_candidates.hint_override_of(k) for k in ktcs] == [None] * 4 + [512] * 4
    problem = Problem(M=16, N=4096, K=4096, dtype="fp16", layout="nn")
    fields = {"op": "mm", "out": [16, 4096], "dynamic": ["M"]}
    sel = ksi.Selector("predict", ranker=_BlockForSize())
    kept = sel.select_items(
        "templates", ktcs, lambda: (problem, fields, torch.device("cpu")), choice_candidates.ktc_candidates
    )
    assert kept == [ktcs[0], ktcs[7]]  # BLOCK_M 16 at the hint 16, 128 for M=512
    pick = sel.dynamic_picks[-1]
    assert pick["by_inductor_size"] and list(pick["per_size"]) == [16, 512]
    # a static M decides once, over every choice
    sel = ksi.Selector("predict", ranker=_BlockForSize())
    static = {k: v for k, v in fields.items() if k != "dynamic"}
    assert (
        len(
            sel.select_items(
                "templates", ktcs, lambda: (problem, static, torch.device("cpu")), choice_candidates.ktc_candidates
            )
        )
        == 1
        and not sel.dynamic_picks
    )


def _strided_inputs(m: int, n: int, k: int):
    """CUDA bf16 operands where A is neither row- nor column-major (every other column)."""
    from torch._inductor import ir
    from torch._inductor.kernel_inputs import MMKernelInputs

    a = ir.InputBuffer(name="a", layout=ir.FixedLayout(torch.device("cuda"), torch.bfloat16, [m, k], [2 * k, 2]))
    b = ir.InputBuffer(name="b", layout=ir.FixedLayout(torch.device("cuda"), torch.bfloat16, [k, n], [n, 1]))
    return MMKernelInputs([a, b])


class _Unavailable:
    ident = "unavailable"

    def rank(self, problem, candidates):
        raise RankerUnavailable("test-unavailable", "kselect: test ranker unavailable -- stock")


@pytest.mark.parametrize("case", ["unreadable-gemm", "no-model", "ranker-unavailable", "not-widened"])
def test_a_gemm_kselect_cannot_decide_gets_the_users_own_space(case, tmp_path):
    """kselect ranks EXHAUSTIVE inside a decided GEMM's templates stage; a GEMM it cannot read (strides kselect
    does not model) or rank (no model file; a ranker without data for it) is handed exactly the
    choices Inductor builds in the user's DEFAULT space, through the real handler and Inductor's
    own generators. Where kselect did not widen the space, the list is left as Inductor built it."""
    from torch._inductor.kernel.mm import aten_mm, mm_template

    make = _strided_inputs if case == "unreadable-gemm" else (lambda m, n, k: cuda_inputs(m, n, k, "nt"))
    templates = [aten_mm, mm_template]
    with lowering("DEFAULT"):
        default = inductor_candidates(make(256, 4096, 4096), templates, "mm")
    sel = (
        ksi.Selector("predict", ranker=_Unavailable())
        if case == "ranker-unavailable"
        else ksi.Selector("predict", model=str(tmp_path / "no-such-model.json"))
    )
    handler = template_configs.make_selecting_choices(sel.select_ktcs, sel.uuid(), widen="EXHAUSTIVE")
    reset_warnings()
    with lowering("EXHAUSTIVE"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # inside the templates stage of a GEMM kselect decides: the user's own space, put aside
        # while kselect's EXHAUSTIVE is in force (the user's EXHAUSTIVE too: nothing was widened)
        handler._spaces.user = "EXHAUSTIVE" if case == "not-widened" else "DEFAULT"
        ki = make(256, 4096, 4096)
        generated = {t.uid: handler.get_ktc(ki, t, "mm", {}) for t in templates}
        exhaustive = len(inductor_candidates(ki, templates, "mm"))
        kept = handler._finalize_template_configs(generated, ki, templates, "mm")
    assert exhaustive > 10 * len(default)
    if case == "not-widened":
        assert len(kept) == exhaustive
    else:
        assert [choice_candidates.ktc_candidate(k) for k in kept] == default
    assert sel.stats["fallbacks"] == 1
    assert len([w for w in caught if issubclass(w.category, KselectFallbackWarning)]) == 1


def test_symbolic_sizes_read_through_the_torch_versions_hint_api():
    """signatures.size_hint: a static size as is; a symbolic one by the lowering graph's own hint
    API (2.13: optimization_hint_with_override; 2.11: size_hint), hint_override included."""
    import sympy
    from torch._dynamo.source import ConstantSource
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    s0 = env.create_symbol(48, source=ConstantSource("m"))
    graph = GraphLowering(torch.fx.symbolic_trace(lambda x: x + 1), shape_env=env)
    with V.set_graph_handler(graph):
        assert signatures.size_hint(7) == 7 and signatures.size_hint(sympy.Integer(9)) == 9
        assert signatures.size_hint(s0) == 48 and signatures.size_hint(2 * s0) == 96
        assert signatures.size_hint(s0, hint_override=512) == 512
        assert signatures.is_symbolic(s0) and not signatures.is_symbolic(sympy.Integer(3))


def test_per_size_union_is_never_larger_than_the_stock_list():
    """verify keeps up to k + ATen at each of six sizes: the union takes each size's first
    pick, then each size's second, ..., and stops at the size of the list stock Inductor would
    tune (`restock`, the handler's regeneration of the user's space), ATen still in."""
    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    def ktc(block_m, warps):
        kw = dict(BLOCK_M=block_m, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_stages=3, num_warps=warps)
        return KernelTemplateChoice(mm_template, DictKernelTemplateParams(kw), {}, None, None)

    from torch._inductor.kernel.mm import aten_mm

    items = [ktc(bm, w) for bm in (16, 32, 64, 128) for w in (2, 4, 8)] + [
        KernelTemplateChoice(aten_mm, DictKernelTemplateParams({}), {}, None, None)
    ]
    problem = Problem(M=16, N=4096, K=4096, dtype="fp16", layout="nn")
    fields = {"op": "mm", "out": [16, 4096], "dynamic": ["M"]}
    sel = ksi.Selector("verify", k=4, adaptive_k=False, ranker=_BlockForSize())
    stock = items[:3]
    kept = sel.select_items(
        "templates",
        items,
        lambda: (problem, fields, torch.device("cpu")),
        choice_candidates.ktc_candidates,
        restock=template_configs.Restock("DEFAULT", lambda: stock),
    )
    assert len(kept) == len(stock) and kept[-1] is items[-1]  # capped; ATen kept
    assert dynamic_sizes.round_robin([[1, 2], [3], [1, 4]]) == [1, 3, 2, 4]
    cands = [Candidate.make("cpp", f"gemm{i}") for i in range(9)] + [Candidate.make("aten", "mm")]
    assert dynamic_sizes.within([1, 2, 3, 9], 3, cands) == [1, 2, 9] and dynamic_sizes.within([1, 9], 1, cands) == [1]
    assert dynamic_sizes.within([1, 2], 3, cands) == [1, 2]
