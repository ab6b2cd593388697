"""The epilogue path end to end on the CPU: a frozen Linear + GELU under max-autotune, where
Inductor's C++ GEMM template fuses the epilogue into its store and MKL's call cannot.

kselect reads the GEMM's epilogue from the graph being lowered, and with the epilogue_fusion
option hands Inductor its few (here MKL + the C++ template) although its ranking alone keeps
MKL; Inductor benchmarks them (its own counter and feedback saver say so), the compiled module
matches eager, the GELU is fused into the template exactly when the template won (Inductor's
`cpp_epilogue_fusion_counter`), and the pick is cached: the recompile benchmarks nothing.

On the CPU's C++ backend Inductor has no fused-kernel benchmark (select_algorithm and the
scheduler skip it there: "don't support benchmark fusion for CPU C++ backend"), so its bare
autotune decides; the GPU's multi-template path is tests/selector/test_gpu_epilogue.py's.
"""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch._dynamo.utils import counters  # noqa: E402

from kselect.selector.inductor import lifecycle as ksi  # noqa: E402

from inductor_sandbox import inductor_sandbox, linear_gelu  # noqa: E402

PROBLEM = "mm:64x80x96:fp32:nt"  # a frozen Linear is x @ W^T


class AtenFirst:
    """Measured-time-like scores with ATen (MKL) far ahead: verify's adaptive k keeps it alone.
    It reads the GEMM's epilogue as a cost model trained with the epilogue block does
    (`reads_epilogue`), and remembers each Epilogue the decision handed it."""

    log_time_scores = True
    ident = "aten-first"
    reads_epilogue = True

    def __init__(self):
        self.handed: list = []

    def rank(self, problem, candidates, epilogue=None):
        self.handed.append(epilogue)
        return np.array([0.0 if c.backend == "aten" else 5.0 for c in candidates])


class Benchmarks:
    """Inductor's feedback saver: every autotune that benchmarked something."""

    def __init__(self):
        self.runs: list[dict] = []

    def __call__(self, timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        self.runs.append(dict(timings))


def _compile(bench: Benchmarks) -> dict:
    """One fresh max-autotune compile of the Linear + GELU, checked against eager; Inductor's counters."""
    bench.runs.clear()
    counters.clear()
    torch._dynamo.reset()
    model = linear_gelu()
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x))
    return dict(counters["inductor"])


def _compile_twice(tmp):
    """Two compiles with the option on and one decision cache: the first decides and hands
    Inductor the few, the second runs on the cached pick."""
    seen: dict = {}
    with inductor_sandbox(tmp, Benchmarks(), freezing=True) as bench:
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        log = logging.getLogger("kselect.selector")
        log.addHandler(handler)
        old_level = log.level
        log.setLevel(logging.INFO)
        try:
            sel = ksi.enable("verify", ranker=AtenFirst(), cache_dir=tmp / "decisions", epilogue_fusion=True)
            from kselect.selector.compat import current_graph

            original = sel.select_choices

            def reading(choices):  # what the selector reads, as it decides
                seen[len(seen)] = current_graph.current_epilogue()
                return original(choices)

            sel.select_choices = reading
            first = (_compile(bench), [dict(r) for r in bench.runs], sel)
            sel2 = ksi.enable("verify", ranker=AtenFirst(), cache_dir=tmp / "decisions", epilogue_fusion=True)
            second = (_compile(bench), [dict(r) for r in bench.runs], sel2)
        finally:
            log.removeHandler(handler)
            log.setLevel(old_level)
    kept = [r.getMessage() for r in records if re.search(r"kselect choices \S+: \d+ candidates seen", r.getMessage())]
    return first, second, seen, kept, tmp / "decisions"


def _sees_the_gelu_epilogue(compiled):
    (_, _, sel), _, seen, _, cache_dir = compiled
    epilogue = seen[0]
    # the decision hands a ranker that reads epilogues the very Epilogue read from the lowering,
    # and keys its cached decision by it
    assert sel.ranker.handed == [epilogue]
    entries = [json.loads(p.read_text()) for p in cache_dir.rglob("*.json")]
    assert [e["key_fields"]["gemm_epilogue"] for e in entries] == [epilogue.as_dict()]
    # GELU lowers to x * 0.5 * (1 + erf(x / sqrt 2)): erf is the activation, the rest arithmetic
    assert epilogue.fusable and epilogue.ops.count("erf") == 1 and epilogue.kind_count("activation") == 1
    assert epilogue.kind_count("arith") == len(epilogue.ops) - 1 >= 3
    assert epilogue.extra_inputs == 0 and epilogue.extra_bytes == 0 and not epilogue.gemm_output_escapes
    assert epilogue.out_bytes == epilogue.gemm_out_bytes == 64 * 80 * 4


def _hands_inductor_the_few_and_it_benchmarks_them(compiled):
    (stats, runs, sel), _, _, kept, _ = compiled
    # the ranking alone keeps MKL (adaptive k over a 5-nat gap); the option adds the C++ template
    assert len(kept) == 1 and "kept 2" in kept[0] and "epilogue" in kept[0], kept
    assert stats["select_algorithm_autotune"] == 1 and len(runs) == 1
    timings = runs[0]
    assert len(timings) == 2 and all(t > 0 for t in timings.values())
    # the GELU went into the C++ template's store exactly when the template won Inductor's benchmark
    template_won = type(min(timings, key=timings.get)).__name__ != "ExternKernelCaller"
    assert (stats.get("cpp_epilogue_fusion_counter", 0) > 0) == template_won, (stats, timings)
    assert sel.stats["verified"] == 1 and sel.stats["fallbacks"] == 0


def _caches_the_pick_and_the_recompile_benchmarks_nothing(compiled):
    (first, first_runs, _), (stats, runs, sel2), _, _, cache_dir = compiled
    assert runs == [] and "select_algorithm_autotune" not in stats
    assert sel2.stats["cache_hits"] == 1 and sel2.stats["decisions"] == 0
    entries = [json.loads(p.read_text()) for p in cache_dir.rglob("*.json")]
    assert len(entries) == 1 and entries[0]["key_fields"]["epilogue"] is True
    picked = entries[0]["kept"]
    timings = first_runs[0]
    fastest = type(min(timings, key=timings.get)).__name__
    assert len(picked) == 1 and picked[0].startswith("aten:" if fastest == "ExternKernelCaller" else "cpp:")
    # the cached pick compiles as it did: fused into the template, or MKL and a separate GELU
    assert stats.get("cpp_epilogue_fusion_counter", 0) == first.get("cpp_epilogue_fusion_counter", 0)


@pytest.mark.slow
def test_linear_gelu_epilogue_path(tmp_path):
    """One test (its two compiles run once, also under xdist): what kselect reads, what it hands
    Inductor and what Inductor does with it, and the cached pick."""
    compiled = _compile_twice(tmp_path)
    _sees_the_gelu_epilogue(compiled)
    _hands_inductor_the_few_and_it_benchmarks_them(compiled)
    _caches_the_pick_and_the_recompile_benchmarks_nothing(compiled)
