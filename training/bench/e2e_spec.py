"""What an end-to-end bench run is, shared by its three modules: the workloads, the variants
(how each compiles), the issue's targets, the correctness tolerances, the defaults per device,
and the one atomic JSON writer. The supervisor (bench_e2e), the worker process (e2e_worker)
and the report (e2e_report) all read these; none imports another's internals for them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

WORKLOADS = ("train", "prefill", "decode")
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "fp32": 1e-4}  # relative-norm error vs eager
# bf16/fp16: a result further than the tolerance from eager's is still correct when it is no
# further from an fp32 run of the same weights and inputs than REF_MULTIPLIER x eager's own
# error (+ tol/10): a deeper graph drifts from eager by rounding alone (plain torch.compile of
# 8 Llama-3-8B layers: 2.2e-2, reports/2026-12-03-verify-measurement-8-layer-model-fp32-check). The rule and the 3 are PyTorch's own
# accuracy check's for half dtypes (torch._dynamo.utils.same, against an fp64 reference).
REF_MULTIPLIER = 3.0
VERIFY_COMPILE_VS_PLAIN = 1.25
PREDICT_COMPILE_VS_PLAIN = 1.05
MAX_AUTOTUNE = "max-autotune-no-cudagraphs"
FAULT_ENV = "KSELECT_BENCH_E2E_FAULT"  # test hook, see e2e_worker._maybe_fault
WATCHDOG_GRACE_S = 10.0


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str | None  # torch.compile mode
    space: str | None  # max_autotune_gemm_search_space; "kselect" = --kselect-space
    kselect: str | None  # selector mode
    help: str
    options: tuple = ()  # extra kselect.selector.enable() keywords, as (name, value) pairs
    backends: str | None = None  # max_autotune_gemm_backends (None: Inductor's default)


VARIANTS = {
    v.name: v
    for v in (
        Variant("plain", None, None, None, "torch.compile(fn): ATen GEMMs, nothing autotuned"),
        Variant("default", MAX_AUTOTUNE, "DEFAULT", None, "stock max-autotune, DEFAULT search space"),
        Variant("exhaustive", MAX_AUTOTUNE, "EXHAUSTIVE", None, "stock max-autotune, EXHAUSTIVE search space"),
        Variant(
            "kselect-verify",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "max-autotune + kselect verify: Inductor benchmarks the model's adaptive top-k + ATen",
        ),
        Variant(
            "kselect-verify-epilogue",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with epilogue_fusion=True: a GEMM with a fusable pointwise epilogue hands "
            "Inductor ATen and the best fusing templates, and Inductor's epilogue-fusion benchmark "
            "picks among them (kernels/epilogue.py)",
            (("epilogue_fusion", True),),
        ),
        Variant(
            "kselect-verify-fused",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with time_fused=True: a GEMM whose fusable epilogue holds an activation "
            "is picked on its kept set's fused forms, each timed by kselect at Inductor's "
            "epilogue-fusion benchmark (selector/verify/fused_forms.py); other GEMMs as verify",
            (("time_fused", True),),
        ),
        Variant(
            "kselect-verify-keep",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with release_memory=False: keeps the measurement's cuBLAS workspace and "
            "cached blocks (is that memory what slows verify's "
            "prefill replay on identical kernels?)",
            (("release_memory", False),),
        ),
        Variant(
            "kselect-verify-cool",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with warm_while_compiling=False: the GPU idles while the kept templates "
            "compile and warms 100 ms before the timing, a tenth of the heat at the compile's end (is "
            "that heat what slows verify's first steps?)",
            (("warm_while_compiling", False),),
        ),
        Variant(
            "kselect-verify-workers",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with compile_in='workers': the kept Triton templates compile in Inductor's "
            "compile-worker processes, warmed as the compile starts, instead of threads of the compiling "
            "process (does that shorten the measurement's compile wait?)",
            (("compile_in", "workers"),),
        ),
        Variant(
            "kselect-verify-unpriced",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with compile_budget=0: keeps its ranked templates without pricing their "
            "compiles (what does the price save, and cost?)",
            (("compile_budget", 0.0),),
        ),
        Variant(
            "kselect-verify-cold-start",
            MAX_AUTOTUNE,
            "kselect",
            "verify",
            "kselect verify with warm_start=False: the compile prepares Triton on its own thread and "
            "meets cold compile workers (what does the warm start "
            "save?)",
            (("warm_start", False),),
        ),
        Variant(
            "kselect-predict",
            MAX_AUTOTUNE,
            "kselect",
            "predict",
            "max-autotune + kselect predict: the model's top-1, nothing benchmarked",
        ),
        Variant(
            "autotune-aten",
            MAX_AUTOTUNE,
            None,
            None,
            "stock max-autotune offered ATen alone (max_autotune_gemm_backends=ATEN): one choice per "
            "GEMM, nothing benchmarked -- what max-autotune's GEMM path costs a compile by itself, "
            "the floor under kselect's compile time",
            backends="ATEN",
        ),
    )
}
# verify with one setting changed: experiments, each run right after verify itself
_VERIFY_EXPERIMENTS = (
    "kselect-verify-epilogue",
    "kselect-verify-fused",
    "kselect-verify-keep",
    "kselect-verify-cool",
    "kselect-verify-workers",
    "kselect-verify-unpriced",
    "kselect-verify-cold-start",
)
# Run order inside a workload, baseline first; plan() puts every exhaustive run last.
ORDER = ("plain", "default", "kselect-verify", *_VERIFY_EXPERIMENTS, "kselect-predict", "autotune-aten", "exhaustive")
# experiments that run only when --variants names them
OPT_IN = (*_VERIFY_EXPERIMENTS, "autotune-aten")
DEFAULT_VARIANTS = tuple(v for v in ORDER if v not in OPT_IN)

# Defaults by device: the H200 run vs the CPU test (tiny fp32 model).
# warmup_s: on the H200 a process starts its steps in the state its compile left the GPU (40-50 C
# after the compile, 55-56 C after 10 s of steps at the 8-layer prefill's power limit); 10 s of
# untimed steps put every variant at the same temperature and halved the spread between
# processes (reports/2026-12-04-memory-release-warm-up s3, reports/2026-12-04-prefill-target-warm-up-lm-head-compile-wait s2): the steady state the step is
# meant to be. A CPU has no such transient worth 10 s of the CI's tiny model.
DEVICE_DEFAULTS = {
    "cuda": {"model": "llama3-8b-1l", "dtype": "bf16", "batch": 8, "seq": 1024, "warmup_s": 10.0},
    "cpu": {"model": "tiny", "dtype": "fp32", "batch": 2, "seq": 32, "warmup_s": 0.0},
}


def write_json(path: Path, obj) -> None:
    """Atomic: a reader (or a kill) never sees half a file."""
    from kselect.selector.atomic_write import write_text

    write_text(path, json.dumps(obj, indent=1, default=str) + "\n")
