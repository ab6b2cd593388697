"""`kselect bench e2e`: a Llama-style training step, prefill and decode under each variant
(training/bench/e2e.py runs it; e2e_spec.py says what a variant is)."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.training.bench import e2e
from kselect.training.bench.common import policy_settings
from kselect.training.bench.e2e_spec import DEFAULT_VARIANTS, OPT_IN, ORDER, WORKLOADS
from kselect.training.bench.real_models import REAL_MODELS
from kselect.training.cli.flags import add_policy_args
from kselect.training.cli.output import Console, invocation


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "e2e",
        help="Llama-style training step, prefill and decode under each variant",
        description=e2e.__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "--model",
        help="model preset (training/bench/llama.py PRESETS: llama3-8b-2l, llama3-8b-1l, "
        "llama3-8b-1l-v32k, tiny, or llama3-8b-<N>l for N of the 32 layers; default "
        "llama3-8b-1l on cuda, tiny on cpu), or a real model definition "
        f"(training/bench/real_models.py: {', '.join(REAL_MODELS)})",
    )
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on cuda, fp32 on cpu")
    p.add_argument("--device", choices=("cuda", "cpu"), help="default cuda when available")
    p.add_argument(
        "--workloads",
        help=f"comma-separated subset of {','.join(WORKLOADS)} (default: every one the model runs)",
    )
    p.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated subset of {','.join(ORDER)} (default: all but the opt-in experiments "
        f"{', '.join(OPT_IN[:-1])} and {OPT_IN[-1]})",
    )
    p.add_argument("--batch", type=int, help="sequences per step (decode: M = batch); default 8 cuda, 2 cpu")
    p.add_argument("--seq", type=int, help="train sequence and prompt length; default 1024 cuda, 32 cpu")
    p.add_argument("--steps", type=int, default=20, help="timed steady-state steps (median; default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps after the first call (default 3)")
    p.add_argument(
        "--warmup-s",
        type=float,
        help="and untimed steps until this many seconds have passed "
        "(default 10 on cuda, 0 on cpu): the first seconds after a compile still carry what the "
        "compile did to the GPU (its temperature and clocks; verify's measurement ends it), at a "
        "power limit above all; 0 = none, as the runs before 2026-12-04 had",
    )
    p.add_argument(
        "--profile-steps",
        type=int,
        default=5,
        help="steps run under torch.profiler after "
        "the timing, for the step's kernel time by kind (GEMM, attention, Inductor, memory, "
        "other), and (prefill/decode) as many CUDA-graph replays; 0 = none (default 5)",
    )
    add_policy_args(p)
    p.add_argument(
        "--kselect-space",
        choices=("exhaustive", "default"),
        default="exhaustive",
        help="search space kselect ranks (default exhaustive: it prunes before code "
        "generation, so the whole space costs only ranking time)",
    )
    p.add_argument(
        "--autotune",
        choices=("gemm", "full"),
        default="gemm",
        help="what the max-autotune variants tune: gemm = GEMM choices only (Inductor's "
        "max_autotune_gemm; default: compile-time differences are GEMM selection alone), "
        "full = mode max-autotune-no-cudagraphs, which adds coordinate-descent tuning of "
        "every pointwise/reduction kernel to every max-autotune variant, kselect ones too",
    )
    p.add_argument("--kselect-model", default="", help="cost-model booster (default: the shipped one)")
    p.add_argument("--exhaustive-model", help="model preset for the exhaustive variant (default --model)")
    p.add_argument("--exhaustive-workloads", help="workloads of the exhaustive variant (default --workloads)")
    p.add_argument(
        "--freezing",
        action="store_true",
        help="prefill/decode: inductor freezing (weights as constants) in every variant",
    )
    p.add_argument(
        "--rtol", type=float, help="relative-norm tolerance vs eager (default bf16 2e-2, fp16 1e-2, fp32 1e-4)"
    )
    p.add_argument(
        "--profile-compile",
        action="store_true",
        help="run each compile under cProfile: logs/<workload>-<variant>.prof (pstats) and "
        ".prof.txt (the 60 largest cumulative entries); profiling inflates compile s",
    )
    p.add_argument(
        "--cold-pool",
        action="store_true",
        help="do not wait for Inductor's compile-worker pool before the timed compile (it "
        "then starts racing the compile, as in a script's first torch.compile; by default "
        "every variant waits for it first and the wait is reported apart: `compile_pool_s` in results.json)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="processes per (workload, variant), in "
        "interleaved rounds, every other one reversed; the report gives the median and range "
        "over them (between-process noise on the H200 reached 5-48 %% of a step, "
        "reports/2026-12-02-e2e-h200/samples.md); exhaustive runs once",
    )
    p.add_argument(
        "--max-minutes",
        type=float,
        default=60.0,
        help="budget: runs that would start later are skipped (and reported); a running one is stopped at the deadline",
    )
    p.add_argument("--out", help="report directory (default reports/e2e-<device>, e.g. e2e-h200)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout")
    p.set_defaults(func=run)


def settings_from_args(args) -> dict:
    """The bench's validated settings from its flags."""
    return e2e.bench_settings(
        policy=policy_settings(args),
        device=args.device,
        model=args.model,
        dtype=args.dtype,
        batch=args.batch,
        seq=args.seq,
        steps=args.steps,
        warmup=args.warmup,
        warmup_s=args.warmup_s,
        profile_steps=args.profile_steps,
        kselect_space=args.kselect_space,
        kselect_model=args.kselect_model,
        freezing=args.freezing,
        seed=args.seed,
        autotune=args.autotune,
        workloads=args.workloads,
        variants=args.variants,
        max_minutes=args.max_minutes,
        repeats=args.repeats,
        profile_compile=args.profile_compile,
        warm_pool=not args.cold_pool,
        exhaustive_model=args.exhaustive_model,
        exhaustive_workloads=args.exhaustive_workloads,
        rtol=args.rtol,
    )


def run(args) -> int:
    settings = settings_from_args(args)
    out = Path(args.out or f"reports/e2e-{e2e.device_slug(settings['device'])}")
    out.mkdir(parents=True, exist_ok=True)
    console = Console.of(args)
    report = e2e.bench(settings, out, console.log, invocation(args), console.progress)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    return 1 if e2e.failed_runs(report) else 0
