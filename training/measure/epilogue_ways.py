"""The ways a verify decision can see a GEMM's fused epilogue, each against the same few
compiled and timed one by one (time_pinned, training/measure/epilogue_labels.py).

`handover`: kselect hands Inductor its few (epilogue_fusion) and Inductor's epilogue-fusion
benchmark picks; `fused`: kselect times the few's fused forms at that benchmark (time_fused,
selector/verify/fused_forms.py). For each: the wall seconds to the pick, the compiled
function's step time, the pick as verify cached it, and the step time of a recompile from that
cache (the function a later process runs); for the pinned few: their seconds and the fastest.
A step is timed call by call, the host's launch overhead in it; on a GPU each is also read as
its GPU time alone (`gpu_ms`, epilogue_labels.gpu_time_ms), the time the pick decides.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Callable

WAYS = {"handover": {"epilogue_fusion": True}, "fused": {"time_fused": True}}


def _compile_and_time(fn: Callable, args: tuple, device_type: str, repeats: int, cache_dir: Path, settings: dict):
    """(seconds to the checked first call, its step ms timed call by call, its GPU time alone
    (None on the CPU), the Selector) of one verify compile."""
    import torch

    from kselect.selector.inductor import lifecycle
    from kselect.training.measure.epilogue_labels import _time_ms, gpu_time_ms

    torch._dynamo.reset()
    t0 = time.perf_counter()
    sel = lifecycle.enable("verify", cache_dir=str(cache_dir), **settings)
    try:
        with torch._inductor.config.patch(max_autotune=True, force_disable_caches=True), torch.no_grad():
            compiled = torch.compile(fn)
            torch.testing.assert_close(compiled(*args), fn(*args), rtol=2e-2, atol=2e-2)
            seconds = time.perf_counter() - t0
            step_ms = _time_ms(compiled, args, device_type, repeats, 5)
            gpu_ms = gpu_time_ms(compiled, args) if device_type == "cuda" else None
    finally:
        lifecycle.disable()
        torch._dynamo.reset()
    sel.cache.flush()
    return seconds, step_ms, gpu_ms, sel


def warm_process(device_type: str, **enable_kwargs) -> None:
    """One small GEMM + ReLU compiled under verify first, so neither way's seconds carry what
    a process pays once (the served model's load, Triton's and Inductor's set-up): the
    comparison is of the decisions, whichever runs first."""
    import torch

    g = torch.Generator(device=device_type).manual_seed(1)
    dtype = torch.bfloat16 if device_type == "cuda" else torch.float32
    x, w = (torch.randn(64, 256, generator=g, device=device_type).to(dtype) for _ in range(2))
    cache_dir = Path(tempfile.mkdtemp(prefix="kselect-warm-"))
    _compile_and_time(lambda a, b: torch.relu(a @ b.t()), (x, w), device_type, 1, cache_dir, enable_kwargs)


def kselect_vs_pinned(
    fn: Callable, args: tuple, device_type: str, *, way: str = "handover", repeats: int = 50, **enable_kwargs
) -> dict:
    """One GEMM + epilogue function decided `way` (WAYS) from a fresh decision cache, then the
    same few pinned one by one. `enable_kwargs`: more verify settings (k=2, a model)."""
    from kselect.training.measure.epilogue_labels import time_pinned

    if way not in WAYS:
        raise ValueError(f"unknown way {way!r}: expected one of {sorted(WAYS)}")
    settings = {**WAYS[way], **enable_kwargs}
    cache_dir = Path(tempfile.mkdtemp(prefix=f"kselect-{way}-"))
    seconds, step_ms, gpu_ms, sel = _compile_and_time(fn, args, device_type, repeats, cache_dir, settings)
    decided = [d for d in sel.decisions if d["stage"] == "choices"] or [
        d for d in sel.decisions if d["stage"] == "templates"
    ]
    few = [d["kept"] for d in decided]
    entries = [json.loads(p.read_text()) for p in cache_dir.rglob("*.json")]
    picked = [e["kept"] for e in entries if e["key_fields"].get("verified") and e["key_fields"].get("epilogue")]
    _, again_ms, again_gpu_ms, again = _compile_and_time(fn, args, device_type, repeats, cache_dir, settings)
    kept = few[-1] if few else []
    t1 = time.perf_counter()
    pinned = [time_pinned(fn, args, key, device_type, repeats=repeats) for key in kept]
    pinned_s = time.perf_counter() - t1
    ran = [t for t in pinned if not t.error]
    best = min(ran, key=lambda t: t.step_ms) if ran else None
    best_gpu = min(ran, key=lambda t: t.ms) if ran else None
    return {
        "few": kept,
        "why": decided[-1]["why"] if decided else "",
        way: {
            "seconds": seconds,
            "step_ms": step_ms,
            "picks": picked,
            "recompiled_step_ms": again_ms,
            "gpu_ms": gpu_ms,
            "recompiled_gpu_ms": again_gpu_ms,
            "recompile_measured": len(again.measurements),
            "measurements": list(sel.measurements),
        },
        "pinned": {
            "seconds": pinned_s,
            "step_ms": best.step_ms if best else None,
            "pick": best.candidate if best else None,
            # on a GPU each pinned compile's GPU time alone (its label): the fastest of them
            "gpu_ms": best_gpu.ms if best_gpu and device_type == "cuda" else None,
            "gpu_pick": best_gpu.candidate if best_gpu and device_type == "cuda" else None,
            "records": [t.__dict__ for t in pinned],
        },
        "epilogue": ran[0].epilogue if ran else {},
    }


def handover_vs_pinned(fn: Callable, args: tuple, device_type: str, *, repeats: int = 50, **enable_kwargs) -> dict:
    """kselect handing Inductor its few (epilogue_fusion) against that few pinned one by one
    (kselect_vs_pinned, way "handover")."""
    return kselect_vs_pinned(fn, args, device_type, way="handover", repeats=repeats, **enable_kwargs)
