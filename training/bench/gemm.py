"""`kselect bench gemm`: per-GEMM tuning time and chosen-kernel speed, stock vs kselect.

Every variant compiles each shape of a shapes file as a one-GEMM function (`a @ b`, with the
layout's transposes as views, + bias for addmm) in its own process with fresh Inductor and
Triton cache directories, so nothing one variant compiled helps another:
- plain: torch.compile without max-autotune (the compile-time floor; no GEMM tuning);
- default / exhaustive: stock max-autotune over Inductor's DEFAULT / EXHAUSTIVE config lists;
- kselect-verify / kselect-predict: max-autotune as a user runs it (DEFAULT configured) with
  `kselect.selector.enable(mode)`, which ranks the EXHAUSTIVE list for the GEMMs it decides and
  prunes it before code generation (verify: adaptive top-k + ATen benchmarked; predict: top-1, nothing);
  a GEMM kselect cannot rank falls back to the DEFAULT list.
All max-autotune variants enable persistent-TMA templates and disable CUDA graphs in the
compiled function. Measured per (variant, shape): compile wall time (tuning time = compile
time minus plain's), the number of choices Inductor benchmarked (its own feedback saver), the
chosen kernel, its real runtime (the compiled function under CUDA graphs with cold rotating
operands: kernels/timing, the collector's harness) and its error against an fp32 reference.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kselect.training.bench.common import cold_cache_env, ranker_ident
from kselect.training.bench.gemm_report import write_report
from kselect.training.bench.gemm_summary import summarize
from kselect.training.bench.gemm_variants import VARIANTS, BenchError, parse_variants
from kselect.training.bench.run_order import alternating_rounds


def _spawn(plan: dict, timeout: float | None) -> str:
    """Run one variant in a fresh process with cold caches; returns '' or why it stopped."""
    tmp = tempfile.mkdtemp(prefix=f"kselect-bench-{plan['variant']}-")
    env = cold_cache_env(Path(tmp))
    plan_path = Path(tmp) / "plan.json"
    plan_path.write_text(json.dumps(plan))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kselect.training.bench.gemm_worker", str(plan_path)], env=env, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"killed after {timeout:.0f} s (time budget)"
    return "" if proc.returncode == 0 else f"worker exited with status {proc.returncode}"


def exhaustive_subset(problems, n: int):
    """The n shapes with the smallest EXHAUSTIVE space (stock EXHAUSTIVE takes minutes each)."""
    from kselect.kernels.triton.space import triton_space

    if n < 0 or n >= len(problems):
        return list(problems)
    return sorted(problems, key=lambda p: (len(triton_space(p, "exhaustive")), p.key))[:n]


def _environment(device: str) -> dict:
    import torch

    from kselect.training.measure.provenance import code_digest

    env = {"torch": torch.__version__, "device": device, "kselect_code": code_digest()}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device == "cuda":
        env["device_name"] = torch.cuda.get_device_name(0)
    return env


def bench_gemm(
    problems,
    variants: list[str],
    out: Path,
    *,
    device: str = "cuda",
    model: str = "",
    exhaustive_shapes: int = 3,
    max_minutes: float = 0.0,
    repeats: int = 1,
    policy: dict | None = None,
    command: str = "",
    say=print,
    progress=None,
) -> dict:
    """Every variant over `problems` (stock EXHAUSTIVE over the `exhaustive_shapes` with the
    smallest space), each in its own cold process, `repeats` interleaved rounds; writes
    results.jsonl, summary.json and README.md into `out` and returns the summary. `policy`:
    kselect's run settings (training/bench/common.py policy_settings). `say` hears a line per
    variant process; `progress` ("bench gemm processes", done, total) after each."""
    variants = parse_variants(",".join(variants))
    if not problems:
        raise BenchError("no shapes selected (check --shapes-file / --workload)")
    if device not in ("cuda", "cpu"):
        raise BenchError(f"--device must be cuda or cpu, got {device!r}")
    if repeats < 1:
        raise BenchError(f"--repeats must be >= 1, got {repeats}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise BenchError(
                "no CUDA device visible: `kselect bench gemm` times real kernels "
                "(use --device cpu to exercise the pipeline on a CPU)"
            )
    if device == "cuda" and any(VARIANTS[v][1] for v in variants):
        try:
            ranker_ident(torch.device("cuda"), model)
        except Exception as exc:  # noqa: BLE001 -- RankerUnavailable, ModelError, ImportError...
            raise BenchError(
                f"kselect cannot rank on this GPU ({type(exc).__name__}: {exc}); its variants "
                "would fall back to stock and the comparison would be meaningless"
            ) from None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    results.unlink(missing_ok=True)
    deadline = time.time() + 60 * max_minutes if max_minutes else 0.0
    subset = exhaustive_subset(problems, exhaustive_shapes)
    # interleaved rounds, every other one reversed; stock EXHAUSTIVE stays last in each round,
    # so a time budget cuts it, not kselect
    order = list(alternating_rounds(variants, repeats, last=("exhaustive",)))
    for done, (repeat, v) in enumerate(order, 1):
        if progress:
            progress("bench gemm processes", done - 1, len(order))
        shapes = subset if v == "exhaustive" else problems
        left = deadline - time.time() if deadline else None
        if left is not None and left <= 0:
            with open(results, "a") as fh:
                for p in shapes:
                    fh.write(
                        json.dumps({"variant": v, "problem": p.key, "repeat": repeat, "skipped": "time budget spent"})
                        + "\n"
                    )
            continue
        say(f"== {v}: {len(shapes)} shapes" + (f" (round {repeat + 1} of {repeats})" if repeats > 1 else ""))
        plan = {
            "variant": v,
            "repeat": repeat,
            "device": device,
            "model": model,
            **(policy or {}),
            "out": str(results.resolve()),
            "deadline": deadline,
            "problems": [p.to_dict() for p in shapes],
        }
        why = _spawn(plan, timeout=left + 30 if left is not None else None)
        if why:
            say(f"   {v}: {why}")
            with open(results, "a") as fh:
                fh.write(json.dumps({"variant": v, "problem": "*", "repeat": repeat, "error": why}) + "\n")
    if progress:
        progress("bench gemm processes", len(order), len(order))
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    summary = summarize(rows)
    write_report(out, rows, summary, command, _environment(device))
    return summary
