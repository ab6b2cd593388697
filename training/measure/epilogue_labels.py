"""Labels for a GEMM with its epilogue, timed as Inductor compiles them.

Why: the collector times bare GEMMs, but what a user runs is the GEMM and its pointwise
epilogue as Inductor compiles them -- a template with the epilogue fused into its store, or
ATen followed by the epilogue as its own kernel (kernels/epilogue.py). The label of a
GEMM with an epilogue is the fused template's time against ATen plus the separate kernel.

How: for each candidate, one max-autotune compile of the whole function (GEMM + epilogue) in
which kselect pins that candidate (predict mode over a ranker that scores it alone first), so
Inductor generates that choice and its scheduler fuses what it would fuse. The compiled
function is checked against eager, then timed whole. On a GPU the label is its GPU time alone
(`gpu_time_ms`: CUDA-graph replays over rotating copies of its operands, the collector's
harness, as verify reads the fused forms), and the step timed call by call, the host's launch
overhead in it, is kept beside (`step_ms`). On the H200 a decode ReLU x mul's kernels took
~0.014 ms while its step read 0.09-0.17 ms (reports/2026-12-07-gpu-suite-h200): timed call by
call, the label would rank launch overhead, not kernels. On the CPU the label is the wall clock.
The record also says what Inductor made of the epilogue: on the CPU its own
`cpp_epilogue_fusion_counter`, everywhere the kernels it generated. Nothing here re-implements
a kernel or a fusion: it is Inductor's compile, pinned to one choice.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from kselect.kernels.candidate import Candidate


@dataclass
class EpilogueTiming:
    """One candidate's compile of the function: its time, what Inductor fused, or why not run."""

    candidate: str
    ms: float = float("nan")  # the label: GPU time alone on a GPU (gpu_time_ms), the wall clock on the CPU
    step_ms: float = float("nan")  # the compiled function timed call by call (_time_ms): host overhead in it
    fused: bool | None = None  # the epilogue went into the GEMM's kernel (CPU: Inductor's counter)
    kernels: int = 0  # kernels Inductor generated for the function (ATen's call not among them)
    epilogue: dict = field(default_factory=dict)  # the GEMM's epilogue as kselect read it
    error: str = ""
    problem: dict = field(default_factory=dict)  # the GEMM (Problem.to_dict) the pinned choice ran
    pinned: dict = field(default_factory=dict)  # the pinned Candidate: backend, template, params


class PinnedRanker:
    """Scores one candidate ahead of all others (a measured-time ranker's scale, taken at its
    word); remembers the GEMM it was asked about, its epilogue (read during the lowering) and the
    pinned Candidate itself (training/data/epilogue_rows.py turns the three into a training row)."""

    log_time_scores = True

    def __init__(self, key: str):
        self.key, self.ident = key, f"pinned:{key}"
        self.seen_keys: list[str] = []
        self.epilogue: dict = {}
        self.problem: dict = {}
        self.pinned: dict = {}

    def rank(self, problem, candidates: Sequence[Candidate]) -> np.ndarray:
        from kselect.selector.compat import current_graph

        self.seen_keys = [c.key for c in candidates]
        self.epilogue = current_graph.current_epilogue().as_dict()
        self.problem = problem.to_dict()
        pinned = next((c for c in candidates if c.key == self.key), None)
        if pinned is not None:
            self.pinned = {"backend": pinned.backend, "template": pinned.template, "params": pinned.kwargs}
        return np.array([0.0 if c.key == self.key else 1.0 for c in candidates])


def _time_ms(fn: Callable, args, device_type: str, repeats: int, warmup: int) -> float:
    """The median of `repeats` timed calls after `warmup` untimed ones."""
    import torch

    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        if device_type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def gpu_time_ms(fn: Callable, args: tuple) -> float:
    """The GPU time of one call of `fn(*args)` alone: CUDA-graph replays of it over rotating
    copies of its tensor arguments, enough that the other copies evict each one from L2
    (kernels/timing.py's time_runners and rotation_count, the collector's harness). A function
    that cannot be captured is read by back-to-back launches between CUDA events instead."""
    import torch

    from kselect.kernels.timing import rotation_count, time_runners

    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    nbytes = sum(t.untyped_storage().nbytes() for t in tensors)
    l2 = torch.cuda.get_device_properties(tensors[0].device).L2_cache_size if tensors else 0
    copies = [
        tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        for _ in range(rotation_count(nbytes, l2) - 1)
    ]
    runners = [lambda a=a: fn(*a) for a in [args, *copies]]
    try:
        return time_runners(runners, device="cuda").median_ms
    except RuntimeError:  # a capture refused (a host sync in the function): launches, not replays
        return time_runners(runners, device="cuda", use_graph=False).median_ms


def time_pinned(
    fn: Callable,
    args: tuple,
    candidate: str,
    device_type: str,
    *,
    repeats: int = 50,
    warmup: int = 5,
    rtol: float = 2e-2,
    atol: float = 2e-2,
    inductor_config: dict | None = None,
) -> EpilogueTiming:
    """Compile fn(*args) under max-autotune with `candidate` (a Candidate key) pinned for its GEMM,
    check it against eager and time it. A candidate Inductor does not offer, or a compile that
    fails or disagrees with eager, comes back with `error` set (never raised)."""
    import torch
    from torch._dynamo.utils import counters
    from torch._inductor import metrics

    from kselect.selector.inductor import lifecycle

    ranker = PinnedRanker(candidate)
    out = EpilogueTiming(candidate)
    torch._dynamo.reset()
    counters.clear()
    metrics.reset()
    patch = {"max_autotune": True, "force_disable_caches": True, **(inductor_config or {})}
    # kselect's own space (EXHAUSTIVE, as verify's few come from): the pinned config is generated
    sel = lifecycle.enable("predict", ranker=ranker, search_space="EXHAUSTIVE")
    try:
        with torch._inductor.config.patch(patch), torch.no_grad():
            compiled = torch.compile(fn)
            got, want = compiled(*args), fn(*args)
            kept = [k for d in sel.decisions for k in d["kept"]]
            if candidate not in kept:
                out.error = f"not among Inductor's choices {ranker.seen_keys}"
                return out
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
            out.step_ms = _time_ms(compiled, args, device_type, repeats, warmup)
            out.ms = gpu_time_ms(compiled, args) if device_type == "cuda" else out.step_ms
    except Exception as exc:  # noqa: BLE001 -- one candidate's failure is its record, not the run's
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        lifecycle.disable()
        torch._dynamo.reset()
    out.epilogue, out.problem, out.pinned = ranker.epilogue, ranker.problem, ranker.pinned
    out.kernels = int(metrics.generated_kernel_count)
    if device_type == "cpu":
        out.fused = counters["inductor"]["cpp_epilogue_fusion_counter"] > 0
    return out


def epilogue_label(timings: Sequence[EpilogueTiming]) -> dict:
    """The label of one GEMM + epilogue: the fastest template compile (epilogue fused where
    Inductor fused it) against the fastest ATen compile (the epilogue its own kernel), and
    their ratio (< 1: the fused template wins the step)."""
    ran = [t for t in timings if not t.error and np.isfinite(t.ms)]
    aten = [t for t in ran if t.candidate.startswith("aten:")]
    templates = [t for t in ran if not t.candidate.startswith("aten:")]
    best_aten = min(aten, key=lambda t: t.ms) if aten else None
    best_template = min(templates, key=lambda t: t.ms) if templates else None
    label = {
        "aten_separate_ms": best_aten.ms if best_aten else None,
        "aten": best_aten.candidate if best_aten else None,
        "template_fused_ms": best_template.ms if best_template else None,
        "template": best_template.candidate if best_template else None,
        "template_fused": best_template.fused if best_template else None,
    }
    label["ratio"] = label["template_fused_ms"] / label["aten_separate_ms"] if best_aten and best_template else None
    return label


def pinned_candidates(problem, templates: int, seed: int = 0) -> list[str]:
    """What a GEMM + epilogue case pins, as Candidate keys: ATen's choice for the GEMM, then a
    sample of `templates` of the Triton configs stock DEFAULT tunes for it (kernels/triton/space.py;
    fusing and not), seeded by the problem so a rerun pins the same."""
    import hashlib

    from kselect.kernels.triton.space import triton_space

    space = sorted(triton_space(problem, "default"), key=lambda c: c.key)
    rng = np.random.default_rng([seed, int(hashlib.sha256(problem.key.encode()).hexdigest()[:8], 16)])
    picked = rng.choice(len(space), size=min(templates, len(space)), replace=False) if space else []
    return [Candidate.make("aten", problem.op).key] + [space[i].key for i in sorted(picked)]


def label_case(
    case, keys: Sequence[str], device_type: str, *, repeats: int = 50, warmup: int = 5, seed: int = 0, **compile_kw
) -> list[EpilogueTiming]:
    """One GEMM + epilogue case (training/workloads/epilogues.py's EpilogueCase: `function`,
    `operands(device, seed)`) compiled and timed pinned to each candidate key (time_pinned;
    `compile_kw`: its inductor_config)."""
    args = case.operands(device_type, seed)
    return [
        time_pinned(case.function, args, key, device_type, repeats=repeats, warmup=warmup, **compile_kw) for key in keys
    ]


def collect_epilogue_labels(
    cases: Sequence,
    data,
    device_type: str = "cuda",
    *,
    templates: int = 8,
    candidates: Sequence[str] | None = None,
    repeats: int = 50,
    seed: int = 0,
    max_minutes: float = 0.0,
    say: Callable[[str], None] = print,
) -> dict:
    """Time each case pinned to each of its candidates (`candidates`, else pinned_candidates;
    label_case) and append the records to DATA/epilogue_labels.jsonl (training/data/epilogue_rows.py)
    case by case, so a rerun resumes: a case already in the file is skipped. DATA's fingerprint
    must be this device's (written when it has none): labels join the bare rows of their own card.
    `max_minutes` > 0: no case starts after that long. Returns counts."""
    import torch

    from kselect.selector.fingerprint import device_fingerprint
    from kselect.training.data.dataset import DatasetDir
    from kselect.training.data.epilogue_rows import append_records, read_records, record_of

    DatasetDir(data).write_fingerprint(device_fingerprint(torch.device(device_type)))
    done = {r["case"] for r in read_records(data)}
    t0 = time.perf_counter()
    counts = {"cases": 0, "skipped": 0, "records": 0, "failed": 0, "stopped_early": False}
    for case in cases:
        if case.name in done:
            counts["skipped"] += 1
            continue
        if max_minutes and time.perf_counter() - t0 > 60 * max_minutes:
            counts["stopped_early"] = True
            break
        problem = case.problem()
        keys = list(candidates) if candidates else pinned_candidates(problem, templates, seed)
        timings = label_case(case, keys, device_type, repeats=repeats, seed=seed)
        append_records(data, [record_of(case.name, t, problem) for t in timings])
        failed = sum(bool(t.error) for t in timings)
        counts["cases"] += 1
        counts["records"] += len(timings)
        counts["failed"] += failed
        ratio = epilogue_label(timings)["ratio"]
        say(f"{case.name}: {len(timings) - failed}/{len(timings)} ran; fused template / ATen + kernel: {ratio}")
    return counts
