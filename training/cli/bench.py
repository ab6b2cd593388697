"""`kselect bench ...`: side-by-side benchmarks of stock max-autotune and kselect on a GPU.

`gemm` compares per-GEMM tuning time and chosen-kernel time on a shapes file; `e2e` does the
same for whole transformer training/inference steps; `gemm-pool` and `e2e-pool` pool several
runs of each; `rank` times ranking one GEMM's space on one CPU core. Each has its own module
here (training/cli/bench_*.py), imported only when its sub-subcommand runs.
"""

from __future__ import annotations

from kselect.training.cli.main import add_subcommands

VERBS = {
    "gemm": ("kselect.training.cli.bench_gemm", "stock DEFAULT/EXHAUSTIVE vs kselect verify/predict, per GEMM"),
    "e2e": ("kselect.training.cli.bench_e2e", "Llama-style training step, prefill and decode under each variant"),
    "gemm-pool": (
        "kselect.training.cli.bench_gemm_pool",
        "several `bench gemm` runs as one report: each shape at its median",
    ),
    "e2e-pool": (
        "kselect.training.cli.bench_e2e_pool",
        "pool the processes of several `bench e2e` runs: medians, targets, how sure",
    ),
    "e2e-plot": (
        "kselect.training.cli.bench_e2e_plot",
        "per model and workload: each variant's step speed-up over plain and its compile, one picture",
    ),
    "rank": ("kselect.training.cli.bench_rank", "time ranking one GEMM's whole space (featurise + predict)"),
}


def add_parser(sub, argv: list[str] | None = None) -> None:
    """`bench` and its benches; with argv only the bench it names is built (main.add_subcommands)."""
    p = sub.add_parser("bench", help="stock max-autotune vs kselect: tuning time and kernel speed")
    add_subcommands(p.add_subparsers(dest="bench", metavar="BENCH"), VERBS, argv, verb="kselect bench")
