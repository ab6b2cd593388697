"""Where a compiled step's device time goes, by kind of kernel: GEMM, attention, Inductor's
generated kernels, memory copies/fills, other.

Why: two compiled variants' whole-step times differ run to run by ~0.3-0.5 % even with the
very same kernels (8 Llama-3-8B layers, prefill, 47 ms: plain and kselect predict, both cuBLAS
throughout, 0.36 % apart GPU-only; reports/2026-12-03-8-layers-all-workloads-kernel-time). Two GEMM kernel choices a selector
weighs often differ by far less. The GEMM kernels' own time per step is the part GEMM selection
controls, and a profile separates it from the rest.

On CUDA the profile is torch.profiler's device activity: every kernel, memcpy and memset, each
with its duration on the GPU. On the CPU (no kernels) it is the self time of the CPU ops that
are GEMMs or attention (`aten::mm`, `aten::addmm`, ...), the rest of the step unattributed:
Inductor's generated C++ is not an op the profiler sees.
"""

from __future__ import annotations

import statistics

KINDS = ("gemm", "attention", "inductor", "memory", "other")

# Lower-case name fragments, tried in order: Inductor's pointwise/reduction kernels first (their
# names list the fused ops, which may say mm), attention before GEMM (CUTLASS's attention kernels
# are named cutlass too, flex attention is an Inductor template), then GEMM (cuBLAS, CUTLASS,
# Inductor's GEMM templates triton_tem_*), then any other generated kernel.
_FUSED = ("triton_poi_", "triton_red_", "triton_per_", "cpp_fused")
_ATTENTION = ("flash", "fmha", "attention", "attn", "sdpa", "flex")
_GEMM = ("gemm", "nvjet", "xmma", "cublas", "cutlass", "splitk", "triton_tem_")
_INDUCTOR = ("triton_",)
_MEMORY = ("memcpy", "memset")

# CPU ops whose self time is GEMM / attention work (the BLAS call has no op of its own).
_CPU_GEMM_OPS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::_addmm_activation",
        "mkl::_mkl_linear",
        "mkldnn::_linear_pointwise",
        "aten::mkldnn_linear",
    }
)
_CPU_ATTENTION_FRAGMENT = "scaled_dot_product"


def kernel_kind(name: str) -> str:
    """The kind (one of KINDS) of a GPU kernel, judged by its name."""
    n = name.lower()
    for kind, fragments in (
        ("inductor", _FUSED),
        ("attention", _ATTENTION),
        ("gemm", _GEMM),
        ("inductor", _INDUCTOR),
        ("memory", _MEMORY),
    ):
        if any(f in n for f in fragments):
            return kind
    return "other"


def cpu_op_kind(name: str) -> str | None:
    """gemm / attention for the CPU ops that do that work, None for every other op."""
    if name in _CPU_GEMM_OPS:
        return "gemm"
    return "attention" if _CPU_ATTENTION_FRAGMENT in name else None


def summarize(timed: list[tuple[str, str, float]], steps: int, source: str, top: int = 40) -> dict:
    """Per-step milliseconds by kind from (name, kind, microseconds) records of `steps` steps,
    and per kind its `top` kernels by time ([name, ms per step, calls per step]): which kernel
    moved, when two runs' totals of a kind differ (`differences`)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    by_name: dict[tuple[str, str], list[float]] = {}
    for name, kind, us in timed:
        entry = by_name.setdefault((kind, name), [0.0, 0])
        entry[0] += us
        entry[1] += 1
    per_kind = dict.fromkeys(KINDS, 0.0)
    for (kind, _), (us, _) in by_name.items():
        per_kind[kind] += us
    ms = {k: round(v / steps / 1e3, 4) for k, v in per_kind.items()}
    ms["total"] = round(sum(per_kind.values()) / steps / 1e3, 4)
    kernels = {}
    for kind in KINDS:
        ranked = sorted(((n, v) for (k, n), v in by_name.items() if k == kind), key=lambda nv: -nv[1][0])
        if ranked:
            kernels[kind] = [
                [name[:120], round(us / steps / 1e3, 4), round(n / steps, 2)] for name, (us, n) in ranked[:top]
            ]
    return {"source": source, "steps": steps, "ms_per_step": ms, "kernels": kernels}


def _device_records(events) -> list[tuple[str, str, float]]:
    """(name, kind, microseconds) of every GPU activity, in the order the GPU started them."""
    from torch.autograd import DeviceType

    # a user annotation mirrored on the GPU timeline spans kernels already counted
    gpu = [e for e in events if e.device_type != DeviceType.CPU and not getattr(e, "is_user_annotation", False)]
    gpu.sort(key=lambda e: e.time_range.start)
    return [(e.name, kernel_kind(e.name), float(e.time_range.elapsed_us())) for e in gpu]


def sequence(timed: list[tuple[str, str, float]], steps: int, name_chars: int = 90) -> list | None:
    """Each position of one step's kernel sequence as [name, median microseconds over the
    steps], when the `steps` steps ran the same kernels in the same order (a CUDA graph's
    replays do); None otherwise.

    Why: two variants' steps whose kernel totals agree within the noise between processes
    (+-0.5 ms of 46 on the 8-layer prefill) can still differ in where the time sits, e.g. the
    kernels right after one GEMM; positions line up between variants that differ only in a
    GEMM's kernel (`sequence_differences`)."""
    if steps < 1 or not timed or len(timed) % steps:
        return None
    n = len(timed) // steps
    names = [name for name, _, _ in timed[:n]]
    if any(timed[i][0] != names[i % n] for i in range(len(timed))):
        return None
    return [
        [names[i][:name_chars], round(statistics.median(timed[i + k * n][2] for k in range(steps)), 2)]
        for i in range(n)
    ]


def sequence_differences(mine: list, theirs: list, top: int = 8) -> dict | None:
    """Where two kernel sequences differ: the total (mine - theirs, us); the stretch where their
    names differ (the swap: from the first differing position to the last, counted from each
    end, so a fused kernel that shortens one sequence still lines the rest up) and the share of
    the total before it, in it and after it; the `top` lined-up positions by the size of their
    difference as (my position, my name, their name, my us, their us). `positions` is the
    length, or both lengths where they differ. None with an empty sequence."""
    if not mine or not theirs:
        return None
    lead = 0
    while lead < min(len(mine), len(theirs)) and mine[lead][0] == theirs[lead][0]:
        lead += 1
    tail = 0
    while (
        tail < min(len(mine), len(theirs)) - lead and mine[len(mine) - 1 - tail][0] == theirs[len(theirs) - 1 - tail][0]
    ):
        tail += 1
    aligned = [(i, i) for i in range(lead)] + [(len(mine) - 1 - k, len(theirs) - 1 - k) for k in range(tail)]
    diff = {i: mine[i][1] - theirs[j][1] for i, j in aligned}
    ranked = sorted(aligned, key=lambda ij: -abs(diff[ij[0]]))[:top]
    total = sum(us for _, us in mine) - sum(us for _, us in theirs)
    same_length = len(mine) == len(theirs)
    swapped = lead if lead < max(len(mine), len(theirs)) else None
    out = {
        "total_us": round(total, 2),
        "positions": len(mine) if same_length else [len(mine), len(theirs)],
        "first_swap": swapped,
        "top": [(i, mine[i][0], theirs[j][0], mine[i][1], theirs[j][1]) for i, j in ranked],
    }
    if swapped is not None:
        out["before_swap_us"] = round(sum(diff[i] for i in range(lead)), 2)
        out["swap_us"] = round(
            sum(us for _, us in mine[lead : len(mine) - tail]) - sum(us for _, us in theirs[lead : len(theirs) - tail]),
            2,
        )
        out["after_swap_us"] = round(sum(diff[len(mine) - 1 - k] for k in range(tail)), 2)
        out["swap_kernels"] = [len(mine) - tail - lead, len(theirs) - tail - lead]
    return out


def _cpu_records(events) -> list[tuple[str, str, float]]:
    from torch.autograd import DeviceType

    out = []
    for e in events:
        kind = cpu_op_kind(e.name) if e.device_type == DeviceType.CPU else None
        if kind is not None:
            out.append((e.name, kind, float(e.self_cpu_time_total)))
    return out


def profile_kernels(fn, device, steps: int = 5) -> dict:
    """Run `fn` (already warm) `steps` times under torch.profiler and summarize its time by kind.
    CUDA: kernel durations on the GPU; CPU: the self time of GEMM/attention ops."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activity = ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU
    if cuda:
        torch.cuda.synchronize(device)
    with profile(activities=[activity]) as prof:
        for _ in range(steps):
            fn()
        if cuda:
            torch.cuda.synchronize(device)
    events = prof.events()
    if cuda:
        records = _device_records(events)
        out = summarize(records, steps, "GPU kernels (torch.profiler, CUDA activity)")
        seq = sequence(records, steps)
        if seq is not None:
            out["sequence"] = seq
        return out
    return summarize(_cpu_records(events), steps, "CPU ops' self time (GEMM/attention ops only)")


def combine(profiles: list[dict]) -> dict | None:
    """Several processes' profiles as one: the median per kind, every process's value per kind
    (`samples`, for tests across processes), and the first one's kernel lists."""
    profiles = [p for p in profiles if p and "ms_per_step" in p]
    if not profiles:
        return None
    keys = dict.fromkeys(k for p in profiles for k in p["ms_per_step"])
    samples = {k: [p["ms_per_step"].get(k, 0.0) for p in profiles] for k in keys}
    out = dict(profiles[0])
    out["ms_per_step"] = {k: statistics.median(v) for k, v in samples.items()}
    out["samples"] = samples
    out["processes"] = len(profiles)
    return out


def differences(mine: dict, theirs: dict, top: int = 5) -> list[tuple[str, str, float, float]]:
    """The `top` kernels whose time per step differs most between two profiles, as (kind, name,
    my ms, their ms); a kernel one profile lacks counts as 0 there. Kernel names are Inductor's
    (deterministic for one graph) or the library's, so the same kernel matches across processes."""

    def flat(profile):  # names are cut at 120 characters: two kernels may share one, so add
        out: dict = {}
        for kind, rows in (profile.get("kernels") or {}).items():
            for name, ms, _ in rows:
                out[kind, name] = out.get((kind, name), 0.0) + ms
        return out

    a, b = flat(mine), flat(theirs)
    keys = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, 0.0) - b.get(k, 0.0)))
    return [(kind, name, a.get((kind, name), 0.0), b.get((kind, name), 0.0)) for kind, name in keys[:top]]
