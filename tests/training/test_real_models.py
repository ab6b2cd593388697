"""The bench's real model definitions on the CPU: tiny configs of the transformers Llama and
Qwen3-MoE, torchtitan's Llama and the two MLPs compile with kselect enabled and match eager.

On the CPU kselect decides a frozen Linear between ATen/MKL and Inductor's C++ micro-GEMM
templates; the ranker here prefers the templates, so kselect's picks (not only ATen) run in
the compiled models. Tolerances: fp32 1e-4 relative norm; the bf16 MoE 2e-2, or PyTorch's
half-precision rule against an fp32 copy (e2e_worker.judge). Cold CPU compiles cost 10-40 s
each here (C++ kernels, and verify's measured C++ templates: k = 1), so each model compiles
once, in one mode: transformers' Llama in
verify, the MoE in predict, the MLPs' training step in verify, torchtitan's in the bench's
own worker with KSELECT_MODE=verify in its environment (the path its users take).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu_model import served_model  # noqa: E402

from kselect.selector.inductor import lifecycle as ksi  # noqa: E402
from kselect.training.bench import e2e, e2e_worker, real_models  # noqa: E402
from kselect.training.bench.common import GemmCounter  # noqa: E402

from inductor_sandbox import inductor_sandbox  # noqa: E402

SPEC = {"seed": 0, "batch": 2, "seq": 8, "steps": 1, "warmup": 0, "profile_steps": 0}


class PreferTemplates:
    """Scores with every template ahead of ATen (lower is better), so kselect keeps a
    template wherever Inductor offers one."""

    log_time_scores = False
    ident = "prefer-templates"

    def rank(self, problem, candidates):
        return np.array([1.0 if c.backend == "aten" else 0.0 for c in candidates])


@pytest.fixture(scope="module")
def transformers():
    """transformers, imported once for the module (its import takes seconds)."""
    return pytest.importorskip("transformers", reason="the [models] extra (transformers) is not installed")


def _compiled_case(tmp_path, name, workload, dtype, mode, caplog, k=1, **config):
    """Build `name`'s case, enable kselect `mode` with the template-first ranker (verify: the
    top `k` + ATen measured), run the worker's own check and timing; (result dict, selector)."""
    caplog.set_level(logging.INFO, logger="kselect.selector")
    spec = {**SPEC, "model": name, "workload": workload, "rtol": 2e-2 if dtype == torch.bfloat16 else 1e-4}
    with inductor_sandbox(tmp_path, GemmCounter(), **config):
        torch._dynamo.reset()
        sel = ksi.enable(mode, ranker=PreferTemplates(), search_space=None, k=k, min_k=1)
        _, case, _ = real_models.build_case(spec, torch.device("cpu"), dtype)
        res: dict = {}
        run = e2e_worker.run_train_case if workload == "train" else e2e_worker.run_inference_case
        run(case, spec, res, lambda: None, torch.compile)
        return res, sel


@pytest.mark.slow
def test_hf_llama_decode_compiles_under_kselect_verify_and_matches_eager(transformers, tmp_path, caplog):
    res, sel = _compiled_case(tmp_path, "hf-llama-tiny", "decode", torch.float32, "verify", caplog, freezing=True)
    assert res["correctness"]["ok"] and res["correctness"]["rel_err"] < 1e-4, res["correctness"]
    # q/k/v/o, gate/up/down and lm_head: frozen Linears kselect decided, none sent back to stock
    assert sel.stats["decisions"] >= 4 and sel.stats["fallbacks"] == 0, sel.stats
    assert any(d["kept"][0].startswith("cpp:") for d in sel.decisions), sel.decisions


@pytest.mark.slow
def test_hf_moe_grouped_gemms_compile_with_kselect_left_to_stock(transformers, tmp_path, caplog):
    """transformers' Qwen3-MoE experts call torch._grouped_mm under torch.compile (bf16): the op
    gate hands them to stock Inductor, the model's Linears are still kselect's, and the
    compiled prefill matches eager."""
    res, sel = _compiled_case(tmp_path, "hf-qwen3-moe-tiny", "prefill", torch.bfloat16, "predict", caplog)
    c = res["correctness"]
    assert c["ok"] and c["rel_err"] < 2e-2, c
    assert "kselect: grouped_mm is not modelled; stock autotuning" in caplog.text
    assert sel.stats["fallbacks"] == 0, sel.stats


@pytest.mark.slow
def test_mlp_training_steps_compile_under_kselect_verify_and_match_eager(tmp_path, caplog):
    for name in ("gpt2-mlp-tiny", "swiglu-mlp-tiny"):
        res, sel = _compiled_case(tmp_path / name, name, "train", torch.float32, "verify", caplog)
        c = res["correctness"]
        assert c["ok"] and c["grad_rel_err"] < 1e-4 and c["loss_rel_err"] < 1e-4, (name, c)
        assert res["step_ms"] > 0 and sel.stats["fallbacks"] == 0, (name, sel.stats)


@pytest.mark.slow
def test_titan_training_step_takes_kselect_from_the_environment(tmp_path):
    """torchtitan's training step, compiled by its apply_compile, in the bench's worker:
    kselect-verify's KSELECT_* settings reach it through the environment alone."""
    pytest.importorskip("torchtitan", reason="the [models] extra (torchtitan) is not installed")
    out = tmp_path / "report"
    args = ["--device", "cpu", "--model", "titan-llama3-tiny", "--batch", "2", "--seq", "16", "--steps", "2"]
    proc = subprocess.run(
        [sys.executable, "-m", "kselect.training.cli.main", "bench", "e2e", *args, "--warmup", "0"]
        + ["--profile-steps", "0", "--variants", "kselect-verify", "--out", str(out)],
        env={k: v for k, v in os.environ.items() if not k.startswith("KSELECT_")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads((out / "results.json").read_text())
    (run,) = report["runs"]
    assert run["status"] == "ok", (run.get("error"), proc.stderr[-2000:])
    c = run["correctness"]
    assert c["ok"] and c["grad_rel_err"] < 1e-4 and c["loss_rel_err"] < 1e-4, c
    assert "stats" in run["kselect"], run["kselect"]  # a selector was installed, by KSELECT_MODE alone
    assert run["gemm_search_space"] == "EXHAUSTIVE"  # the space it ranks for the GEMMs it decides
    assert run["inductor_search_space"] == "DEFAULT"  # Inductor's own, as the user left it


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["prefill", "decode"])
def test_gpu_moe_compiles_under_kselect_verify_with_its_grouped_gemms_left_to_stock(
    transformers, tmp_path, caplog, workload
):
    """On the GPU, with the served model: the bf16 Qwen3-MoE (a tiny config, its experts through
    torch._grouped_mm) compiles under verify and matches eager; grouped_mm goes to stock."""
    served_model()
    caplog.set_level(logging.INFO, logger="kselect.selector")
    spec = {**SPEC, "model": "hf-qwen3-moe-tiny", "workload": workload, "rtol": 2e-2, "batch": 4, "seq": 64}
    with inductor_sandbox(tmp_path, GemmCounter()):
        torch._dynamo.reset()
        sel = ksi.enable("verify", cache_dir=str(tmp_path / "decisions"))
        _, case, _ = real_models.build_case(spec, torch.device("cuda"), torch.bfloat16)
        res: dict = {}
        e2e_worker.run_inference_case(case, spec, res, lambda: None, torch.compile)
    assert res["correctness"]["ok"], res["correctness"]
    assert "kselect: grouped_mm is not modelled; stock autotuning" in caplog.text
    assert sel.stats["decisions"] >= 1 and sel.stats["fallbacks"] == 0, sel.stats


def test_real_models_name_their_workloads_wheels_and_environment():
    """Bad runs are clear errors; a missing package names its wheel; only torchtitan's kselect
    variants get KSELECT_* variables, the variant's mode and policy among them."""
    with pytest.raises(e2e.BenchError, match="runs train only, not prefill"):
        e2e.bench_settings(policy={**_POLICY}, device="cpu", model="gpt2-mlp-tiny", workloads="train,prefill")
    with pytest.raises(e2e.BenchError, match="exceeds hf-llama-tiny's max_positions 512"):
        e2e.bench_settings(policy={**_POLICY}, device="cpu", model="hf-llama-tiny", seq=600)
    assert e2e.bench_settings(policy={**_POLICY}, device="cpu", model="titan-llama3-tiny")["workloads"] == ["train"]
    missing = real_models.RealModel("x", "kselect_no_such_package", "no-such-wheel==1.0", ("train",), 8)
    with pytest.raises(real_models.MissingWheel, match=r"needs kselect_no_such_package \(no-such-wheel==1.0\)"):
        real_models.require(missing)
    spec = {"model": "titan-llama3-tiny", "variant": "kselect-verify", "tmp": "/t", "kselect_space": "EXHAUSTIVE"}
    env = real_models.selector_env(spec, e2e_worker.enable_keywords({**spec, **_POLICY}))
    assert env["KSELECT_MODE"] == "verify" and env["KSELECT_CACHE_DIR"] == "/t/kselect-cache"
    assert env["KSELECT_K"] == str(_POLICY["k"]) and "KSELECT_MODEL" not in env
    assert real_models.selector_env({**spec, "model": "hf-llama-tiny"}, {"mode": "verify"}) == {}
    assert real_models.selector_env(spec, {"mode": None}) == {}


_POLICY = {
    "k": 3,
    "min_k": 1,
    "aten_margin": 0.0,
    "compile_budget": 1.0,
    "adaptive_k": True,
    "early_decision": True,
    "warm_start": True,
}
