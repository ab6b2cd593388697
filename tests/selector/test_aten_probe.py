"""The selector's ATen-kernel facts: read once per problem where a probe can run, missing (None,
so NaN columns) elsewhere, with the reason logged once; a CUDA fingerprint ranks on a machine
that cannot probe."""

import logging

import numpy as np
import pytest
import torch

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.decide.aten_probe import AtenKernelFacts
from kselect.selector.decide.rankers import CostModelRanker
from kselect.selector.model.discovery import load_shipped

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU side of the probe")


def test_disabled_facts_never_probe(monkeypatch):
    import kselect.selector.decide.aten_probe as ap

    monkeypatch.setattr(ap, "probe", lambda problem: pytest.fail("probed while disabled"))
    assert AtenKernelFacts(False)(Problem(64, 64, 64)) is None


def test_no_cuda_leaves_the_columns_missing_and_says_why_once(caplog):
    facts = AtenKernelFacts(True)
    with caplog.at_level(logging.INFO, logger="kselect.selector.decide.aten_probe"):
        assert facts(Problem(64, 64, 64)) is None
        assert facts(Problem(64, 64, 64)) is None  # remembered, not tried again
        assert facts(Problem(32, 64, 64)) is None
    said = [r for r in caplog.records if "not read" in r.getMessage()]
    assert len(said) == 1 and "CUDA" in said[0].getMessage()


def test_a_cuda_ranker_ranks_where_it_cannot_probe():
    model = load_shipped("h200-bf16.json")
    ranker = CostModelRanker(model, {**model.fingerprint, "device_type": "cuda"})
    assert ranker.aten_kernel.enabled
    p = Problem(16, 4096, 4096)
    cands = [Candidate.make("aten", "mm")] + triton_space(p, "exhaustive")
    scores = ranker.rank(p, cands)
    assert np.isfinite(scores).sum() > len(cands) // 2
    assert "aten_probe" in ranker.last_phases_ms()
    cpu = CostModelRanker(model, {**model.fingerprint, "device_type": "cpu"})
    assert not cpu.aten_kernel.enabled
