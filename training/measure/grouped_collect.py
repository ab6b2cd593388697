"""Collect grouped-GEMM (`_grouped_mm`) measurements: every candidate Inductor's grouped-mm
lowering builds, per problem and routing, into a dataset directory of the one schema.

A row is the collector's own (data/rows.py `row_for`): `op` "grouped_mm", `batch` the
group count G, `M` all groups' rows, and `problem_key` the GroupedProblem's key, which names
the routing and seed (`grouped_problem_of` reads it back). One problem's rows are written as
one atomic part file once the problem is done, so a rerun after a crash skips finished
problems and redoes only the one it died in.

Measurement (`measure_inductor`): one max-autotune compile per problem (kernels/grouped/run.py);
each choice runs on the routing's offsets, is checked against ATen's output and timed by the
one harness (kernels/timing.py) over rotating operand copies (L2-cold on CUDA). `measure_aten`
runs ATen's kernel alone, with no compile (a CPU run, or a quick ATen-only baseline).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Iterable

from kselect.kernels.candidate import Candidate
from kselect.kernels.grouped import run
from kselect.kernels.grouped.problem import GroupedProblem
from kselect.kernels.grouped.space import ATEN
from kselect.kernels.timing import rotation_count, time_runners
from kselect.selector.atomic_write import write_text
from kselect.training.data.dataset import DatasetDir
from kselect.training.data.dataset_lock import collector_lock
from kselect.training.data.rows import row_for
from kselect.training.measure.collect_plan import parse_shard

MAX_OPERAND_SETS = 8
STOCK_PICKS_FILE = "stock-picks.json"  # problem key -> stock max-autotune's pick and compile seconds
Measurer = Callable[[GroupedProblem, str, float], list[tuple[Candidate, dict]]]


def grouped_problem_of(row) -> GroupedProblem:
    """The GroupedProblem a dataset row measured (its key names the routing), model tag kept."""
    return GroupedProblem.from_key(str(row["problem_key"]), model=str(row.get("model", "") or ""))


def _operand_sets(problem: GroupedProblem, device: str) -> list[run.GroupedOperands]:
    """The problem's operands, copied so one rotation exceeds the L2 on CUDA (one set on the CPU)."""
    first = run.grouped_operands(problem, device, seed=0)
    if device != "cuda":
        return [first]
    import torch

    nbytes = sum(t.untyped_storage().nbytes() for t in first.args) + problem.M * problem.N * problem.dtype_bytes
    n = min(rotation_count(nbytes, torch.cuda.get_device_properties(device).L2_cache_size), MAX_OPERAND_SETS)
    return [first] + [run.grouped_operands(problem, device, seed=i) for i in range(1, n)]


def _timed(make_runner: Callable, sets, ref, device: str, target_ms: float) -> dict:
    """Run on every set, check the first against `ref`, time them all: a row's measured fields."""
    t0 = time.perf_counter()
    try:
        runners = [make_runner(ops) for ops in sets]
        out = runners[0]()
    except Exception as exc:  # noqa: BLE001 -- a candidate that fails is a row, not a crash
        return {"status": "compile_error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    compile_s = time.perf_counter() - t0
    err = run.relative_error(out, ref)
    if not err <= run.REL_TOLERANCE:
        return {"status": "wrong_result", "rel_error": err, "error": f"relative error {err:.3g} vs ATen"}
    try:
        t = time_runners(runners, target_ms=target_ms, device=device)
    except RuntimeError:  # a kernel whose launch cannot be captured in a CUDA graph: timed launched
        try:
            t = time_runners(runners, target_ms=target_ms, device=device, use_graph=False)
        except Exception as exc:  # noqa: BLE001 -- as above: a row, not a crash
            return {"status": "launch_error", "rel_error": err, "error": f"{type(exc).__name__}: {exc}"[:500]}
    return {
        "time_ms": t.median_ms,
        "time_min_ms": t.min_ms,
        "time_max_ms": t.max_ms,
        "spread": t.spread,
        "noisy": t.noisy,
        "reps": t.reps,
        "method": t.method,
        "rel_error": err,
        "compile_s": compile_s,
    }


def measure_aten(
    problem: GroupedProblem, device: str = "cuda", target_ms: float = 0.25
) -> list[tuple[Candidate, dict]]:
    """ATen's `_grouped_mm` alone on the problem's routing."""
    sets = _operand_sets(problem, device)
    ref = run.aten_grouped(sets[0])
    return [(ATEN, _timed(run.aten_runner, sets, ref, device, target_ms))]


def measure_inductor(
    problem: GroupedProblem, device: str = "cuda", target_ms: float = 0.25, stock_picks: dict | None = None
) -> list[tuple[Candidate, dict]]:
    """Every choice Inductor's lowering builds for the problem, on the problem's routing. With
    `stock_picks` (a dict), Inductor first autotunes as stock does, then compiles keeping ATen's
    choice alone: stock's pick, both compiles' seconds are stored there under the problem's key
    (the bench's stock baseline and the floor of pruning at the choices stage)."""
    sets = _operand_sets(problem, device)
    ref = run.aten_grouped(sets[0])
    results: list[tuple[Candidate, dict]] = []

    def on_choices(choices):
        failed = run.precompile_all(choices)
        for choice in choices:
            cand = run.choice_candidate(choice)
            if cand is None:
                continue
            if id(choice) in failed:
                results.append((cand, {"status": "compile_error", "error": failed[id(choice)]}))
                continue
            outs = {}

            def make(ops, choice=choice, outs=outs):
                out = outs.setdefault(id(ops), run.output_like(choice))
                return run.choice_runner(choice, ops, out)

            results.append((cand, _timed(make, sets, ref, device, target_ms)))

    if stock_picks is not None:  # first, so its Triton compiles are its own (nothing cached yet)
        stock = run.stock_compile(sets[0])
        stock_picks[problem.key] = {
            "candidate": stock.candidate.key if stock.candidate else "",
            "compile_s": stock.compile_s,
            "one_kept_s": stock.one_kept_s,
        }
    run.inductor_grouped_choices(sets[0], on_choices)
    if not results:
        raise RuntimeError(f"Inductor built no grouped-mm choice kselect knows for {problem.key}")
    return results


def load_stock_picks(out: str | Path) -> dict:
    """Every shard's stock picks of a dataset directory, as one map of problem key -> record."""
    picks: dict = {}
    for path in sorted(Path(out).glob(f"shard-*-{STOCK_PICKS_FILE}")):
        picks.update(json.loads(path.read_text()))
    return picks


def problem_rows(problem: GroupedProblem, measured: list[tuple[Candidate, dict]], common: dict) -> list[dict]:
    return [row_for(problem, cand, **{**common, **fields}) for cand, fields in measured]


def collect_grouped(
    problems: Iterable[GroupedProblem],
    out: str | Path,
    measure: Measurer = measure_inductor,
    device: str = "cuda",
    target_ms: float = 0.25,
    workload: str = "moe",
    shard: str = "0/1",
    max_minutes: float = 0.0,
    stock: bool = False,
) -> dict:
    """Measure this shard's problems not yet on disk (sorted by key, every n-th from i), one
    atomic part file per problem, holding the dataset's collector lock. Returns counts. With
    `stock`, `measure` also records stock max-autotune's pick per problem (`measure_inductor`'s
    `stock_picks`), kept in STOCK_PICKS_FILE beside the rows."""
    from kselect.training.measure.hardware_record import collect_fingerprint

    i, n = parse_shard(shard)
    mine = sorted({p.key: p for p in problems}.values(), key=lambda p: p.key)[i::n]
    ds = DatasetDir(Path(out))
    counts = {"measured": 0, "skipped": 0, "rows": 0, "failed_rows": 0}
    t_start = time.monotonic()
    with collector_lock(out, (i, n)):
        fp = collect_fingerprint(0) if device == "cuda" else {}
        if fp:
            ds.write_fingerprint(fp)
        done = {key for key, _cand in ds.done_keys()} if ds.exists() else set()
        picks_path = Path(out) / f"shard-{i}-{n}-{STOCK_PICKS_FILE}"
        picks = json.loads(picks_path.read_text()) if stock and picks_path.exists() else {}
        common = {"space": "grouped", "workload": workload, "fingerprint_id": fp.get("fingerprint_id", "")}
        for problem in mine:
            if problem.key in done:
                counts["skipped"] += 1
                continue
            if max_minutes and time.monotonic() - t_start > 60 * max_minutes:
                break
            extra = {"stock_picks": picks} if stock else {}
            measured = measure(problem, device, target_ms, **extra)
            if stock:
                write_text(picks_path, json.dumps(picks, indent=1, sort_keys=True))
            rows = problem_rows(problem, measured, {**common, "worker": f"grouped-{i}"})
            ds.append(rows, tag=f"grouped-{i}")
            counts["measured"] += 1
            counts["rows"] += len(rows)
            counts["failed_rows"] += sum(r.get("status", "ok") != "ok" for r in rows)
    return counts
