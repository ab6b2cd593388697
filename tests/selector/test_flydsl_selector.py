"""FlyDSL in the selector, on a CPU: its Inductor choices map to flydsl Candidates (never ATen),
the ROCm gate keeps it out of a real max-autotune compile (reason logged once at debug), the
policy for backends a model has no data for, with the shipped H200 model.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kselect.kernels.candidate import Candidate  # noqa: E402
from kselect.kernels.flydsl import inductor as fly  # noqa: E402
from kselect.kernels.flydsl import space  # noqa: E402
from kselect.kernels.problem import Problem  # noqa: E402
from kselect.kernels.triton.space import triton_space  # noqa: E402
from kselect.selector.compat import choice_candidates, template_configs  # noqa: E402
from kselect.selector.decide.policy import UNSEEN_KEEP, choose_kept  # noqa: E402
from kselect.selector.decide.rankers import MeasuredRanker  # noqa: E402
from kselect.selector.fingerprint import device_fingerprint  # noqa: E402
from kselect.selector.inductor import lifecycle as ksi  # noqa: E402

NT = Problem(256, 256, 512, "bf16", "nt")


@pytest.fixture
def graph():
    """A real GraphLowering as V.graph, so MMKernelInputs can read sizes and strides."""
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    with V.set_graph_handler(GraphLowering(torch.fx.symbolic_trace(torch.nn.Identity()))):
        yield


def _buf(name, size, stride):
    from torch._inductor.ir import Buffer, FixedLayout

    return Buffer(name=name, layout=FixedLayout(torch.device("cpu"), torch.bfloat16, size, stride))


def test_flydsl_extern_callers_map_to_the_space_candidates_not_aten(graph):
    from torch._inductor.ir import FixedLayout
    from torch._inductor.kernel.mm import aten_mm
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    a, w_t = _buf("a", [256, 512], [512, 1]), _buf("w", [512, 256], [1, 512])  # x @ W^T: "nt"
    inputs = MMKernelInputs([a, w_t])
    layout = FixedLayout(torch.device("cpu"), torch.bfloat16, [256, 256], [256, 1])
    extern = fly._extern("mm")
    want = space.candidates(NT, "gfx942", "default")[:3]
    for cand in want:
        bound = extern.bind([a, w_t], layout, ab_layout="nt", **cand.kwargs)  # no KTC attached
        got = choice_candidates.caller_candidate(bound)
        assert got == cand and got.key == cand.key and got.backend == "flydsl"
        assert choice_candidates.choice_candidate(bound) == cand
        # through Inductor's KTC path, as the templates stage and the choices stage see it
        ktc = KernelTemplateChoice(extern, DictKernelTemplateParams(cand.kwargs), {"ab_layout": "nt"}, layout, inputs)
        assert choice_candidates.ktc_candidate(ktc) == cand and choice_candidates.caller_candidate(ktc.choice) == cand
        assert choice_candidates.is_flydsl_ktc(ktc)
        [(_, build)] = choice_candidates.flydsl_builds([ktc])
        assert space.kernel_params(cand, NT) == build
    assert choice_candidates.template_of(extern.uid) == ("flydsl", "gemm")
    assert choice_candidates.template_of("aten::flydsl_gemm_addmm") == ("flydsl", "gemm")
    assert choice_candidates.caller_candidate(aten_mm.bind([a, w_t], layout)) == Candidate.make("aten", "mm")
    # knobs missing: unmapped (the selector then leaves the GEMM to stock), never ATen
    assert choice_candidates.caller_candidate(extern.bind([a, w_t], layout, ab_layout="nt")) is None


def test_gate_off_in_a_cpu_max_autotune_compile_logs_once_and_compiles(caplog):
    """The real gate refuses on this CPU torch: FlyDSL adds nothing, says why once at debug."""
    from torch._dynamo.utils import counters

    def f(a, b, c, bias):
        return torch.mm(a, b), torch.addmm(bias, a, b) @ c

    g = torch.Generator().manual_seed(0)
    args = (
        torch.randn(64, 96, generator=g),
        torch.randn(96, 80, generator=g),
        torch.randn(80, 48, generator=g),
        torch.randn(80, generator=g),
    )
    counters.clear()
    torch._dynamo.reset()
    try:
        with (
            torch._inductor.config.patch(max_autotune=True, force_disable_caches=True),
            caplog.at_level(logging.DEBUG, logger="kselect.selector"),
        ):
            sel = ksi.enable("verify", ranker=MeasuredRanker({}), search_space=None)
            got = torch.compile(f)(*args)
    finally:
        ksi.disable()
        torch._dynamo.reset()
    for g_, w in zip(got, f(*args)):
        torch.testing.assert_close(g_, w)
    gemms = list(counters["aten_mm_info"])
    assert len(gemms) >= 3 and any(k.startswith("aten.addmm") for k in gemms)  # all three tuned
    off = [r for r in caplog.records if r.getMessage().startswith("FlyDSL off:")]
    assert len(off) == 1 and off[0].levelno == logging.DEBUG
    assert "not a ROCm build (torch.version.hip is None)" in off[0].getMessage()
    assert sel.joins["flydsl"].off == off[0].getMessage()[len("FlyDSL off: ") :]
    assert not any("FlyDSL choices unavailable" in r.getMessage() for r in caplog.records)


def _h200():
    from kselect.models import shipped_model_path

    try:
        return json.loads(shipped_model_path("h200-bf16.meta.json").read_text())["fingerprint"]
    except FileNotFoundError:
        pytest.skip("the shipped H200 model is not in this checkout")


def _mixed(problem, fly_order=slice(None)):
    fly_cands = space.candidates(problem, "gfx942", "default")[:16][fly_order]
    return ([Candidate.make("aten", "mm")] + triton_space(problem, "default")[:12] + fly_cands, fly_cands)


def test_shipped_model_never_scores_flydsl_verify_benchmarks_a_few_predict_never(caplog):
    h200, problem = _h200(), Problem(4096, 4096, 4096, "bf16", "nt")
    cands, fly_cands = _mixed(problem)
    fly_idx = [i for i, c in enumerate(cands) if c.backend == "flydsl"]
    verify = ksi.Selector("verify", k=4)
    ranker = verify.ranker_for(h200)
    assert ranker.backends == {"aten", "triton"}  # the shipped metadata predates the field
    scores = ranker.rank(problem, cands)
    assert np.isnan(scores[fly_idx]).all()
    assert np.isfinite(np.delete(scores, fly_idx)).all()
    with caplog.at_level(logging.INFO, logger="kselect.selector"):
        kept, _ = verify.select("templates", problem, {}, h200, cands)
    kept_fly = [i for i in kept if cands[i].backend == "flydsl"]
    assert kept_fly == fly_idx[:UNSEEN_KEEP]  # the first ones in listed order
    ranked = [i for i in kept if cands[i].backend != "flydsl"]  # the model's pick(s), ATen net
    assert ranked and len(kept) <= verify.k + 1  # inside the cap (+ the ATen net at most)
    assert "unscored ['flydsl']" in verify.decisions[-1]["why"]
    assert any("unscored ['flydsl']" in r.getMessage() for r in caplog.records)
    # listed order decides which, not the knobs: reversed list, the other end is benchmarked
    rev, rev_fly = _mixed(problem, slice(None, None, -1))
    kept, _ = verify.select("templates", problem, {}, h200, rev)
    assert [rev[i] for i in kept if rev[i].backend == "flydsl"] == rev_fly[:UNSEEN_KEEP]
    for mode, k in (("predict", 4), ("verify", 1)):
        sel = ksi.Selector(mode, k=k)
        kept, _ = sel.select("templates", problem, {}, h200, cands)
        assert kept and not any(cands[i].backend == "flydsl" for i in kept), (mode, k)
    assert len(ksi.Selector("predict").select("templates", problem, {}, h200, cands)[0]) == 1


def test_unseen_policy_limits_and_a_ranker_that_knows_the_backend():
    tri = [Candidate.make("triton", "mm", BLOCK_M=b) for b in (16, 32, 64, 128, 256)]
    fly_cands = space.candidates(NT, "gfx942", "default")[:5]
    cands = tri + fly_cands + [Candidate.make("aten", "mm")]
    close = np.log([1.0, 1.01, 1.02, 1.03, 1.04] + [0.5] * 5 + [3.0])  # flydsl "scores" are ignored
    unseen = list(range(5, 10))
    for k, n_ranked, n_new in ((8, 5, 2), (4, 2, 2), (2, 1, 1), (1, 1, 0)):
        kept, why = choose_kept(cands, close, "verify", k, True, True, unseen)
        assert kept == list(range(n_ranked)) + unseen[:n_new] + [10], (k, kept)
    kept, why = choose_kept(cands, close, "predict", 4, True, True, unseen)
    assert kept == [0] and "5 unscored ['flydsl'] never picked" in why
    # a table that measured FlyDSL scores it like any backend; one that did not, does not
    table = {NT.key: {c.key: t for c, t in zip(cands, np.exp(close))}}
    sel = ksi.Selector("predict", ranker=MeasuredRanker(table))
    fp = device_fingerprint(torch.device("cpu"))
    assert cands[sel.select("templates", NT, {}, fp, cands)[0][0]].backend == "flydsl"
    no_fly = {NT.key: {c.key: t for c, t in zip(cands, np.exp(close)) if c.backend != "flydsl"}}
    sel = ksi.Selector("verify", k=4, ranker=MeasuredRanker(no_fly))
    kept, _ = sel.select("templates", NT, {}, fp, cands)
    assert [i for i in kept if cands[i].backend == "flydsl"] == unseen[:UNSEEN_KEEP]


def test_open_gate_handler_adds_ranks_and_compiles_flydsl(graph, monkeypatch, tmp_path):
    """The selector's handler with the gate forced open (nothing launches): FlyDSL joins ATen's
    mm through Inductor's get_template_configs, the ranker sees its KTCs, the kept ones are
    compiled (compile-only, gfx942) and come back as FlyDSL ExternKernelCallers in a fixed
    layout; a kept config that cannot build is dropped, and all-unbuildable falls back to ATen."""
    from torch._inductor.kernel.mm import aten_mm
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.template_heuristics import registry

    from kselect.kernels import Availability
    from kselect.kernels.flydsl import gate

    monkeypatch.setenv("KSELECT_FLYDSL_CACHE", str(tmp_path))
    monkeypatch.setattr(gate, "rocm_gate", lambda index=0: Availability(True))
    monkeypatch.setattr(fly, "rocm_gate", lambda index=0: Availability(True))
    monkeypatch.setattr(fly, "target_arch", lambda: "gfx942")
    key = (fly._extern("mm").uid, "cpu", "mm")  # this CPU's device type, as ROCm's is "cuda"
    monkeypatch.setitem(registry._TEMPLATE_HEURISTIC_REGISTRY, key, fly.FlyDSLGemmHeuristic)
    monkeypatch.setattr(registry, "_HEURISTIC_CACHE", {})
    a, w_t = _buf("a", [256, 512], [512, 1]), _buf("w", [512, 256], [1, 512])
    inputs = MMKernelInputs([a, w_t])
    fly_cands = space.candidates(NT, "gfx942", "default")[: fly.MAX_CHOICES]
    seen = []

    class Recording(MeasuredRanker):
        def rank(self, problem, candidates):
            seen.append(list(candidates))
            return super().rank(problem, candidates)

    table = {NT.key: {"aten:mm": 1.0}}  # no FlyDSL data: verify benchmarks the first two
    sel = ksi.Selector("verify", k=4, ranker=Recording(table))
    handler = template_configs.make_selecting_choices(sel.select_ktcs, sel.uuid(), join=sel.joins)
    with torch._inductor.config.patch(max_autotune=True):
        choices = handler.get_template_configs(inputs, [aten_mm], "mm")
        other = handler.get_template_configs(MMKernelInputs([a, w_t]), [aten_mm], "bmm")
    assert [choice_candidates.caller_candidate(c).backend for c in other] == ["aten"]  # FlyDSL joins mm/addmm only
    assert seen and seen[0] == [Candidate.make("aten", "mm")] + fly_cands
    got = [choice_candidates.caller_candidate(c) for c in choices]
    assert got == [Candidate.make("aten", "mm")] + fly_cands[:UNSEEN_KEEP]
    assert all(type(c.layout).__name__ == "FixedLayout" for c in choices)
    assert choices[1].kwargs["ab_layout"] == "nt"
    # finalize: an unbuildable kept config is dropped; nothing left -> the other backends
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    def ktc(template, **kw):
        return KernelTemplateChoice(
            template, DictKernelTemplateParams(kw), {"ab_layout": "nt"}, choices[0].layout, inputs
        )

    aten = ktc(aten_mm)
    good = ktc(fly._extern("mm"), **fly_cands[0].kwargs)
    bad = ktc(
        fly._extern("mm"), **{**fly_cands[0].kwargs, "TILE_M": 256, "TILE_N": 256, "TILE_K": 64, "STAGES": 3}
    )  # LDS over gfx942's 64 KiB
    assert sel.joins["flydsl"].finalize([good, bad, aten], [aten, good, bad]) == [good, aten]
    with torch._inductor.config.patch(
        max_autotune=True, max_autotune_gemm_backends="ATEN", max_autotune_allow_flexible_layouts=True
    ):
        # all-extern lists may keep a flexible output layout; FlyDSL writes a contiguous one
        assert handler._need_to_fix_layout([aten, good], "mm")
        assert not handler._need_to_fix_layout([aten], "mm")
    assert sel.joins["flydsl"].finalize([bad], [aten, good, bad]) == [aten]
