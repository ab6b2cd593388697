"""The ranker warms for the graph being compiled, not for a fixed large GEMM.

Why: the fixed warm-up encoded one 4096^3 GEMM's whole space (2,401 candidates) at load; a
decode graph never uses that class, and paid ~55 ms of compile for it on the dev CPU
(reports/2026-12-05-ranker-load-dev-cpu). Now the selector reads the GEMMs of the graph Inductor is
lowering at its first GEMM and warms their size classes; its decisions stay as quick.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from kselect.kernels.backend import Candidate, Problem  # noqa: E402
from kselect.kernels.triton.space import triton_space  # noqa: E402
from kselect.models import shipped_model_path  # noqa: E402
from kselect.selector.compat import autotune, current_graph  # noqa: E402
from kselect.selector.compat.choice_candidates import is_extern  # noqa: E402
from kselect.selector.decide.rankers import CostModelRanker  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.selector.model import features  # noqa: E402
from kselect.selector.model.discovery import load_shipped  # noqa: E402

BF16 = torch.bfloat16
# one-layer decode GEMMs (M = 8): qkv, o (with a bias: addmm), lm_head
DECODE = [
    Problem(8, 6144, 4096, "bf16", "nt"),
    Problem(8, 4096, 4096, "bf16", "nt", op="addmm"),
    Problem(8, 128256, 4096, "bf16", "nt"),
]


def _decode(x, w_qkv, w_o, b_o, w_lm):
    h = torch.mm(x, w_qkv.t())
    h = torch.addmm(b_o, h[:, :4096], w_o.t())
    return torch.mm(h, w_lm.t())


def _decode_args():
    return (
        torch.empty(8, 4096, dtype=BF16),
        torch.empty(6144, 4096, dtype=BF16),
        torch.empty(4096, 4096, dtype=BF16),
        torch.empty(4096, dtype=BF16),
        torch.empty(128256, 4096, dtype=BF16),
    )


class _Graph:
    """What the selector reads of Inductor's GraphLowering: the FX module it lowers."""

    def __init__(self, fn, args, tracing_mode="fake"):
        self.module = make_fx(fn, tracing_mode=tracing_mode)(*args)


def _fingerprint() -> dict:
    meta = json.loads(shipped_model_path("h200-bf16.meta.json").read_text())
    return {**meta["fingerprint"], "device_type": "cuda"}


def test_the_graphs_gemms_are_read_with_their_layouts_and_symbolic_sizes_are_skipped():
    assert current_graph.graph_gemm_problems(_Graph(_decode, _decode_args())) == DECODE

    def backward_like(dy, x, a, b):  # dY.T @ X is "tn"; a batched product, a bmm with bias
        return torch.mm(dy.t(), x), torch.bmm(a, b), torch.baddbmm(a[:, :, :5], a, b)

    args = (torch.empty(64, 32), torch.empty(64, 48), torch.empty(3, 5, 7), torch.empty(3, 7, 5))
    got = current_graph.graph_gemm_problems(_Graph(backward_like, args))
    assert got == [
        Problem(32, 48, 64, "fp32", "tn"),
        Problem(5, 5, 7, "fp32", "nn", op="bmm", batch=3),
        Problem(5, 5, 7, "fp32", "nn", op="bmm", batch=3),
    ]
    # dynamic shapes: the sizes are symbols; reading them must not specialise the compile
    assert (
        current_graph.graph_gemm_problems(_Graph(torch.mm, (torch.empty(9, 16), torch.empty(16, 24)), "symbolic")) == []
    )
    assert current_graph.lowering_graph() is None  # outside a compile


def test_a_real_lowering_shows_the_hook_its_graphs_gemms(tmp_path, monkeypatch):
    """Inside an Inductor compile on this CPU (max-autotune fp32 bmm), the preprocessing hook
    sees the GraphLowering and reads both GEMMs of the graph at the first one."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    seen = []

    def look(choices):
        seen.append(current_graph.graph_gemm_problems(current_graph.lowering_graph()))
        # the ATen call alone goes on: what the hook saw is the check, and benchmarking the C++
        # templates of both bmms would build four of them (~9 s of g++ on the CI's 2 cores)
        return [c for c in choices if is_extern(c)] or choices

    remove = autotune.add_preprocessing_fn(look)
    try:
        torch._dynamo.reset()
        a, b, c = torch.randn(4, 64, 96), torch.randn(4, 96, 80), torch.randn(4, 80, 32)
        with torch._inductor.config.patch(max_autotune=True, force_disable_caches=True):
            got = torch.compile(lambda a, b, c: torch.bmm(torch.bmm(a, b), c))(a, b, c)
    finally:
        remove()
        torch._dynamo.reset()
    torch.testing.assert_close(got, torch.bmm(torch.bmm(a, b), c))
    assert seen, "max-autotune did not reach the preprocessing hook"
    assert seen[0] == [
        Problem(64, 80, 96, "fp32", "nn", op="bmm", batch=4),
        Problem(64, 32, 80, "fp32", "nn", op="bmm", batch=4),
    ]


def test_warming_for_decode_gemms_encodes_their_class_once_and_not_the_large_one(monkeypatch):
    registry = features._CandidateRegistry()  # an empty encoding table: what this process has
    monkeypatch.setattr(features, "_REGISTRY", registry)  # encoded so far is no test of that
    ranker = CostModelRanker(load_shipped("h200-bf16.json"), None)
    calls = []
    rank = ranker.rank
    ranker.rank = lambda problem, cands, **kw: calls.append(problem) or rank(problem, cands, **kw)
    space = ranker.warm_up(DECODE)
    assert calls == [DECODE[0]]  # one size class: ranked once
    lm_head = [Candidate.make("aten", "mm")] + triton_space(DECODE[2], "exhaustive")
    assert set(space) == set(lm_head)
    assert ranker.warm_up(DECODE) == [] and len(calls) == 1  # warmed before: nothing to do
    assert set(registry.index) == {c.key for c in lm_head}  # the decode class's, no more
    large = triton_space(Problem(4096, 4096, 4096), "exhaustive")
    assert sum(c.key not in registry.index for c in large) > len(large) // 2
    ranker.warm_up(DECODE + [Problem(4096, 4096, 4096)])
    assert calls[1:] == [Problem(4096, 4096, 4096)]
    assert all(c.key in registry.index for c in large)


def test_the_selector_warms_once_per_graph_and_without_a_graph_once_per_process(monkeypatch):
    fingerprint = _fingerprint()
    sel = ksi.Selector("predict")
    ranker = sel.ranker_for(fingerprint)  # what a bench's preflight loads: the model, no warm-up
    warmed = []
    warm_up = ranker.warm_up
    monkeypatch.setattr(ranker, "warm_up", lambda problems=None: warmed.append(problems) or warm_up(problems))
    decode = _Graph(_decode, _decode_args())
    monkeypatch.setattr(current_graph, "lowering_graph", lambda: decode)
    sel._load_ranker(fingerprint)
    sel._load_ranker(fingerprint)  # the graph's later GEMMs: warmed already
    assert warmed == [DECODE]
    lm_head = [Candidate.make("aten", "mm")] + triton_space(DECODE[2], "exhaustive")
    kept, _ = sel.select("templates", DECODE[2], {}, fingerprint, lm_head, early=True)
    first = sel.decisions[-1]
    assert first["setup_ms"] > 0 and len(kept) == 1
    sel._load_ranker(fingerprint)
    sel.select("templates", DECODE[2], {}, fingerprint, lm_head, early=True)
    assert sel.decisions[-1]["setup_ms"] < first["setup_ms"]  # the next one set nothing up
    other = _Graph(_decode, _decode_args())  # a second graph (a recompile): read again
    monkeypatch.setattr(current_graph, "lowering_graph", lambda: other)
    sel._load_ranker(fingerprint)
    assert warmed == [DECODE, DECODE]
    monkeypatch.setattr(current_graph, "lowering_graph", lambda: None)  # no graph: the default, once
    sel._load_ranker(fingerprint)
    sel._load_ranker(fingerprint)
    assert warmed == [DECODE, DECODE, None]

    unreadable = _Graph(_decode, _decode_args())
    unreadable.module = None  # its GEMMs cannot be read: the default (done)
    monkeypatch.setattr(current_graph, "lowering_graph", lambda: unreadable)
    sel._load_ranker(fingerprint)
    assert warmed == [DECODE, DECODE, None]
