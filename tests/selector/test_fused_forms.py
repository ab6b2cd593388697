"""verify picking on fused forms (the time_fused option, selector/verify/fused_forms.py and
compat/fused_timing.py), on the CPU.

The readings themselves happen only on GPUs: Inductor builds a multi-template buffer and
benchmarks a template's fused form only there (select_algorithm returns the buffer for a GPU
under benchmark_epilogue_fusion; Scheduler.speedup_by_fusion skips the C++ backend), and the
modules it times are Triton's. So here: the pieces on real Inductor objects (a
MultiTemplateBuffer built in a real GraphLowering, Inductor's own methods wrapped and restored),
the timer on a module of Inductor's benchmark-module form, the cache key, and the path end to
end on a frozen Linear + GELU, where verify measures the set itself and, with no fused forms to
time, caches its bare pick. The GPU run is tests/selector/test_gpu_fused_forms.py.
"""

from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch._dynamo.utils import counters  # noqa: E402

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.epilogue import Epilogue  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.selector.compat import fused_timing  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.verify.fused_forms import FusedTimingUnavailable, time_generated  # noqa: E402

from inductor_sandbox import inductor_sandbox, linear_gelu  # noqa: E402


@pytest.fixture
def graph():
    """A real GraphLowering as V.graph (what a MultiTemplateBuffer registers itself with)."""
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    with V.set_graph_handler(GraphLowering(torch.fx.symbolic_trace(lambda x: x + 1))):
        yield
    fused_timing.uninstall()


def _buffer(choices, timings_fn):
    from torch._inductor import ir
    from torch.utils._ordered_set import OrderedSet

    layout = ir.FixedLayout(torch.device("cpu"), torch.float32, [4, 4])
    return ir.MultiTemplateBuffer(layout, [], timings_fn, list(choices), OrderedSet())


def _template(name: str):
    from torch._inductor import ir

    return ir.TritonTemplateCallerBase(name, [], None, name)


def test_a_handed_buffer_reads_kselects_bare_times_and_others_inductors(graph):
    from torch._inductor import ir

    asked = []
    inductors = lambda hint: asked.append(hint) or {c: 1.0 for c in choices}  # noqa: E731
    choices = [object(), _template("t1"), _template("t2")]
    before = ir.MultiTemplateBuffer.choice_timings
    fused_timing.hand_over(choices, {id(choices[0]): 2.0, id(choices[1]): 1.5, id(choices[2]): math.inf}, print)
    assert ir.MultiTemplateBuffer.choice_timings is not before and fused_timing.available()
    handed = _buffer(choices, inductors)
    assert handed.get_min_choice() == (choices[1], 1.5) and asked == []  # Inductor benchmarked nothing
    other = _buffer([object(), _template("t3")], inductors)
    assert other.get_min_choice()[1] == 1.0 and asked == [None]
    fused_timing.uninstall()
    assert ir.MultiTemplateBuffer.choice_timings is before


def test_the_fusion_benchmark_of_a_handed_set_tries_every_template_and_reads_through_kselect(graph):
    """speedup_by_fusion's scope: Inductor's limit on fused forms (1) raised to the set's
    templates, and a module benchmark inside it is kselect's reading; outside, Inductor's."""
    from torch._inductor import config, ir
    from torch._inductor.codegen.triton import TritonScheduling

    choices = [object(), _template("t1"), _template("t2")]
    read = []
    fused_timing.hand_over(choices, {id(c): 1.0 for c in choices}, lambda mod, caller, spills: read.append(mod) or 0.25)
    buffer = _buffer(choices, None)
    node = types.SimpleNamespace(is_template=lambda: True, get_template_node=lambda: buffer)
    epilogue = types.SimpleNamespace(is_template=lambda: False)

    def scheduler_benchmarks(self, node1, node2):  # what Inductor's method sees, from inside
        return config.max_epilogue_benchmarked_choices, TritonScheduling.benchmark_codegened_module(None, "mod")

    wrapped = fused_timing._wrap_speedup_by_fusion(scheduler_benchmarks)
    assert config.max_epilogue_benchmarked_choices == 1
    assert wrapped(None, node, epilogue) == (2, (0.25, "")) and read == ["mod"]
    assert isinstance(buffer, ir.MultiTemplateBuffer) and config.max_epilogue_benchmarked_choices == 1
    unhanded = _buffer([object(), _template("t3")], None)
    node = types.SimpleNamespace(is_template=lambda: True, get_template_node=lambda: unhanded)
    with pytest.raises(Exception):  # Inductor's own reading: it needs a real module and graph
        wrapped(None, node, epilogue)
    assert read == ["mod"]


def test_a_fused_form_kselect_cannot_time_keeps_inductors_reading_with_one_warning(graph):
    from kselect.selector.warn import reset_warnings

    reset_warnings()  # the warning is once per cause and process

    def cannot(mod, caller, spills):
        raise RuntimeError("capture failed")

    choices = [object(), _template("t1")]
    handed = fused_timing.hand_over(choices, {id(c): 1.0 for c in choices}, cannot)
    benchmark = fused_timing._wrap_benchmark_module(lambda self, mod, spills=8, *a, **k: (9.0, "inductor"))
    with fused_timing._reading(handed, choices[1]), pytest.warns(UserWarning, match="capture failed"):
        assert benchmark(None, "mod") == (9.0, "inductor")
    assert benchmark(None, "mod") == (9.0, "inductor")  # outside a handed set's scope: Inductor's


class _Kernel:
    """The kernel of Inductor's benchmark module (`triton_`): what time_generated reads of it."""

    def __init__(self, spills=0, mutated=()):
        self.launchers = [types.SimpleNamespace(n_spills=spills)]
        self.mutated_arg_names = list(mutated)
        self.fn = types.SimpleNamespace(arg_names=["in_ptr0", "in_ptr1", "out_ptr0", "xnumel", "XBLOCK"])


def _module(kernel) -> types.ModuleType:
    """A module of Inductor's benchmark-module form (get_args, call, triton_) running a GEMM + ReLU."""
    mod = types.ModuleType("fused_benchmark")
    mod.calls = 0

    def get_args():
        return torch.randn(64, 64), torch.randn(64, 64), torch.empty(64, 64), 64 * 64

    def call(args):
        mod.calls += 1
        torch.mm(args[0], args[1], out=args[2]).relu_()

    mod.get_args, mod.call, mod.triton_ = get_args, call, kernel
    return mod


def test_a_generated_module_is_timed_as_inductor_would_read_it():
    mod = _module(_Kernel())
    ms = time_generated(mod)
    assert 0 < ms < 50 and mod.calls > 3
    assert time_generated(_module(_Kernel(spills=9))) == math.inf  # over Inductor's spill limit
    assert time_generated(_module(_Kernel(spills=9)), n_spills_threshold=16) < 50
    # written in place: a float buffer replays as is; anything else, or an unknown name, is not timed
    assert time_generated(_module(_Kernel(mutated=["out_ptr0"]))) < 50
    for mutated in (["xnumel"], ["in_out_ptr0"]):
        with pytest.raises(FusedTimingUnavailable, match="mutates"):
            time_generated(_module(_Kernel(mutated=mutated)))


def _epilogue(op: str) -> Epilogue:
    return Epilogue(ops=(op,), kinds=(("activation", 1),), out_bytes=4096, gemm_out_bytes=4096, fusable=True)


def test_a_fused_decision_is_keyed_by_its_epilogue_and_keeps_the_few(tmp_path):
    from kselect.selector.decide.rankers import MeasuredRanker
    from kselect.selector.inductor.hook import Selector

    problem = Problem(64, 80, 96, "fp32", "nt")
    cands = [Candidate.make("aten", "mkl_linear"), Candidate.make("cpp", "cpp_CppMicroGemmFP32Vec")]
    ranker = MeasuredRanker({problem.key: {cands[0].key: 1.0, cands[1].key: 50.0}})
    sel = Selector("verify", ranker=ranker, cache_dir=str(tmp_path), time_fused=True)
    fp = {"fingerprint_id": "test"}

    def decide(epilogue, op):
        return sel.select("choices", problem, {"op": "mm"}, fp, cands, epilogue=epilogue, gemm_epilogue=_epilogue(op))

    (kept, (relu_key, fields, _)), (_, (gelu_key, _, _)) = decide("fused", "relu"), decide("fused", "erf")
    assert kept == [0, 1] and fields["epilogue"] == "fused"  # the template joins ATen to be timed fused
    assert relu_key != gelu_key and fields["gemm_epilogue"]["ops"] == ["relu"]
    assert decide(False, "relu")[0] == [0]  # no epilogue path: the ranking alone


@pytest.mark.slow
def test_an_activation_epilogue_is_read_and_its_pick_cached_in_a_real_lowering(tmp_path):
    """One frozen Linear + GELU compile with time_fused (about 10 s): the lowering's epilogue
    reads as an activation, so the decision keeps the epilogue's few (MKL + the C++ template)
    keyed by that epilogue. kselect's harness cannot run MKL's packed-weight call beside the
    template (they take other inputs), so the few go to Inductor's benchmark -- the fallback, one
    warning -- whose pick is cached; the output matches eager."""

    class Saver:
        runs: list = []

        def __call__(self, timings, *rest):
            self.runs.append(dict(timings))

    counters.clear()
    torch._dynamo.reset()
    with inductor_sandbox(tmp_path, Saver(), freezing=True) as bench:
        sel = ksi.enable(
            "verify", ranker=_AtenFirst(), cache_dir=tmp_path / "decisions", time_fused=True, verify_timing="kselect"
        )
        model, x = linear_gelu(), torch.randn(64, 96, generator=torch.Generator().manual_seed(1))
        with torch.no_grad(), pytest.warns(UserWarning, match="cannot measure this set"):
            torch.testing.assert_close(torch.compile(model)(x), model(x))
        fused = counters["inductor"].get("cpp_epilogue_fusion_counter", 0)
    sel.cache.flush()
    (timings,) = bench.runs
    entries = [json.loads(p.read_text()) for p in (tmp_path / "decisions").rglob("*.json")]
    (entry,) = [e for e in entries if e["key_fields"].get("verified")]
    fields = entry["key_fields"]
    assert fields["epilogue"] == "fused" and "erf" in fields["gemm_epilogue"]["ops"]
    assert len(timings) == 2 and sel.stats["verified"] == 1  # the few: MKL and the template
    template_won = type(min(timings, key=timings.get)).__name__ != "ExternKernelCaller"
    assert entry["kept"][0].startswith("cpp:" if template_won else "aten:") and (fused > 0) == template_won


class _AtenFirst:
    """Scores ATen (MKL) far ahead, so the template is kept only as the epilogue's few."""

    log_time_scores = True
    ident = "aten-first"

    def rank(self, problem, candidates):
        return np.array([0.0 if c.backend == "aten" else 5.0 for c in candidates])
