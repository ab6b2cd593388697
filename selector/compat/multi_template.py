"""Inductor's deferred GEMM choice (`ir.MultiTemplateBuffer`): on GPUs, with
`config.benchmark_epilogue_fusion`, autotuning a GEMM returns a buffer holding every choice, and
the scheduler picks later -- a Triton template fused with the GEMM's epilogue when its fused
kernel beats the best bare choice plus the epilogue as its own kernel, else the fastest bare
choice. kselect hands such a set over for a GEMM with a fusable epilogue (the epilogue_fusion
option) and reads the scheduler's pick here, to cache it.

The pick is read at the two places Inductor makes it (torch 2.11 and 2.13): a template is set
by `MultiTemplateBuffer.finalize_as_triton_caller(s)` (after the fusion benchmark, or for a
buffer nothing fused with); an extern choice (ATen) is taken in
`Scheduler.finalize_multi_template_buffers` as the fastest bare choice of a buffer still
unfinalised there.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable

_lock = threading.Lock()
_watchers: list[Callable] = []
_originals: dict = {}


def defers_to_fusion_benchmark(choices, device_type: str) -> bool:
    """Whether Inductor will make these choices a multi-template buffer (select_algorithm's own
    condition, read on 2.11 and 2.13): max-autotune on, epilogue benchmarking on, a GPU, and a
    Triton template among them (without one the scheduler has nothing to fuse into)."""
    from torch._inductor import config
    from torch._inductor.select_algorithm import TritonTemplateCaller

    return (
        device_type != "cpu"
        and bool(config.max_autotune or config.max_autotune_gemm)
        and bool(config.benchmark_epilogue_fusion)
        and len(choices) > 1
        and any(isinstance(c, TritonTemplateCaller) for c in choices)
    )


def _notify(buffer, chosen) -> None:
    device = getattr(getattr(buffer, "layout", None), "device", None)
    for fn in list(_watchers):
        fn(list(buffer.choices), chosen, getattr(device, "type", "cuda"))


def _extern_pick(scheduler, buffer):
    """The extern choice `finalize_multi_template_buffers` will take for `buffer`, or None (a
    template, or no single extern to name): the fastest bare choice, or under a layout conflict
    the extern fallback -- the order Inductor asks them in (the conflict check freezes layouts)."""
    from torch._inductor import ir

    conflict = getattr(scheduler, "_has_layout_conflict_for_template", None)
    if conflict is not None and conflict(buffer):
        externs = [c for c in buffer.choices if not isinstance(c, ir.TritonTemplateCallerBase)]
        return externs[0] if len(externs) == 1 else None
    chosen, _ = buffer.get_min_choice()
    return None if isinstance(chosen, ir.TritonTemplateCallerBase) else chosen


def _wrappers() -> dict:
    """(owner, method name) -> its wrapper: each tells the watchers the pick, then runs Inductor's."""
    from torch._inductor import ir
    from torch._inductor.scheduler import Scheduler, SchedulerNode

    mtb = ir.MultiTemplateBuffer

    def finalize_as_triton_caller(original):
        def wrapper(self, caller):
            _notify(self, caller)
            return original(self, caller)

        return wrapper

    def finalize_as_triton_callers(original):  # per-size callers: the one for the compile's own size
        def wrapper(self, callers):
            _notify(self, callers.get(None, next(iter(callers.values()))))
            return original(self, callers)

        return wrapper

    def finalize_multi_template_buffers(original):
        def wrapper(self):
            for node in self.nodes:  # buffers no fusion finalised: an extern pick is made here
                if isinstance(node, SchedulerNode) and isinstance(node.node, mtb):
                    chosen = _extern_pick(self, node.node)
                    if chosen is not None:
                        _notify(node.node, chosen)
            return original(self)

        return wrapper

    return {
        (mtb, "finalize_as_triton_caller"): finalize_as_triton_caller,
        (mtb, "finalize_as_triton_callers"): finalize_as_triton_callers,
        (Scheduler, "finalize_multi_template_buffers"): finalize_multi_template_buffers,
    }


def _install() -> None:
    """Wrap Inductor's finalising methods (those this torch has) once."""
    for (owner, name), wrap in _wrappers().items():
        original = getattr(owner, name, None)
        if original is not None:
            _originals[(owner, name)] = original
            setattr(owner, name, functools.wraps(original)(wrap(original)))


def _uninstall() -> None:
    for (owner, name), original in _originals.items():
        setattr(owner, name, original)
    _originals.clear()


def watch_final_choices(fn: Callable) -> Callable[[], None]:
    """Call fn(choices, chosen, device_type) whenever the scheduler settles a multi-template
    buffer; returns a function that stops it (the last one out restores Inductor's methods)."""
    with _lock:
        if not _watchers:
            _install()
        _watchers.append(fn)

    def remove():
        with _lock:
            if fn in _watchers:
                _watchers.remove(fn)
                if not _watchers:
                    _uninstall()

    return remove
