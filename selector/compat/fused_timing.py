"""Inductor's epilogue-fusion benchmark with kselect's readings: for a kept set verify hands over
(`hand_over`), the scheduler's multi-template buffer of that set reads its bare times from
kselect's measurement and times each fused form (a template with the epilogue, and the epilogue
alone as its own kernel) through kselect's function instead of Inductor's benchmarker. Inductor
still generates every form and applies its own rule (the fastest fused template if it beats the
fastest bare choice plus the separate epilogue kernel, else the fastest bare choice).

Where the readings are taken (torch/_inductor/scheduler.py and codegen/triton.py, read on 2.13;
the same methods on 2.11, which compat/multi_template.py already wraps there):
- `MultiTemplateBuffer.choice_timings(hint_override)`: the bare times behind `get_min_choice`
  (ms1 and the order the choices are tried in); kselect's are seeded into its `_choice_timings`;
- `Scheduler.speedup_by_fusion(node1, node2)`: benchmarks the epilogue alone (ms2) and starts
  the fused compiles; `max_epilogue_benchmarked_choices` (default 1: only the fastest bare
  template's fused form) is raised to the set's template count there, so every kept template's
  fused form is timed;
- `MultiTemplateBuffer.swap_as_triton_caller(caller)`: the scope in which one choice's fused
  module is benchmarked (also when the benchmark is deferred past speedup_by_fusion);
- `TritonScheduling.benchmark_codegened_module(mod, ...)`: the one place both ms2 and the fused
  times are read; inside the two scopes above it calls kselect's timer.
A reading kselect cannot take (an error) falls back to Inductor's own, with one warning.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from dataclasses import dataclass
from typing import Callable

from kselect.selector.warn import warn_once

MAX_HANDED = 256  # sets whose buffers never reached the scheduler (a failed lowering) are dropped

_lock = threading.Lock()
_state = threading.local()
_handed: dict[int, "HandedSet"] = {}  # id(choice) -> its set
_originals: dict = {}


@dataclass
class HandedSet:
    """A kept set handed over with kselect's bare times (ms by id(choice); inf: dropped) and the
    function that times a generated module: time_module(mod, caller or None, n_spills_threshold)
    -> ms (caller None: the epilogue alone)."""

    choices: list  # held, so the ids stay those of these choices while the set is handed over
    bare_ms: dict
    time_module: Callable

    def bare_timings(self, choices) -> dict:
        return {c: self.bare_ms[id(c)] for c in choices}


def _targets() -> dict:
    """(owner, method name) -> its wrapper maker, for the methods this torch has."""
    from torch._inductor import ir
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.scheduler import Scheduler

    return {
        (ir.MultiTemplateBuffer, "choice_timings"): _wrap_choice_timings,
        (ir.MultiTemplateBuffer, "swap_as_triton_caller"): _wrap_swap,
        (Scheduler, "speedup_by_fusion"): _wrap_speedup_by_fusion,
        (TritonScheduling, "benchmark_codegened_module"): _wrap_benchmark_module,
    }


def available() -> bool:
    """Whether this torch has every method the fused readings go through."""
    try:
        return all(getattr(owner, name, None) is not None for owner, name in _targets())
    except Exception:  # noqa: BLE001 -- an import that moved: not available
        return False


def hand_over(choices, bare_ms: dict, time_module: Callable) -> HandedSet:
    """Register a kept set about to become a multi-template buffer (installing the wrappers)."""
    handed = HandedSet(list(choices), dict(bare_ms), time_module)
    with _lock:
        if not _originals:
            _install()
        if len(_handed) > MAX_HANDED:
            _handed.clear()
        for c in handed.choices:
            _handed[id(c)] = handed
    return handed


def handed_set(buffer) -> HandedSet | None:
    """The set a multi-template buffer was built from, when every one of its choices is handed."""
    choices = list(getattr(buffer, "choices", None) or ())
    sets = {id(_handed.get(id(c))) for c in choices}
    first = _handed.get(id(choices[0])) if choices else None
    return first if first is not None and len(sets) == 1 else None


@contextlib.contextmanager
def _reading(handed: HandedSet | None, caller=None):
    """While inside: module benchmarks on this thread are kselect's for `handed` (`caller`'s form)."""
    prev = getattr(_state, "current", None)
    _state.current = (handed, caller) if handed is not None else prev
    try:
        yield
    finally:
        _state.current = prev


def _wrap_choice_timings(original):
    def wrapper(self, hint_override=None):
        handed = handed_set(self)
        cached = getattr(self, "_choice_timings", None)
        if handed is not None and hint_override is None:
            if isinstance(cached, dict):
                cached.setdefault(None, handed.bare_timings(self.choices))
            else:
                return handed.bare_timings(self.choices)
        return original(self, hint_override)

    return wrapper


def _wrap_swap(original):
    @contextlib.contextmanager
    def wrapper(self, caller):
        with original(self, caller):
            handed = handed_set(self)
            with _reading(handed, caller) if handed is not None else contextlib.nullcontext():
                yield

    return wrapper


def _wrap_speedup_by_fusion(original):
    def wrapper(self, node1, node2):
        from torch._inductor import config, ir

        handed = None
        for node in (node1, node2):
            template = node.get_template_node() if node.is_template() else None
            if isinstance(template, ir.MultiTemplateBuffer):
                handed = handed_set(template)
                break
        if handed is None:
            return original(self, node1, node2)
        templates = sum(isinstance(c, ir.TritonTemplateCallerBase) for c in handed.choices)
        limit = getattr(config, "max_epilogue_benchmarked_choices", None)
        raised = {} if limit is None else {"max_epilogue_benchmarked_choices": max(int(limit), templates)}
        with config.patch(raised), _reading(handed):
            return original(self, node1, node2)

    return wrapper


def _wrap_benchmark_module(original):
    def wrapper(self, mod, n_spills_threshold=8, *args, **kwargs):
        current = getattr(_state, "current", None)
        if current is None:
            return original(self, mod, n_spills_threshold, *args, **kwargs)
        handed, caller = current
        try:
            ms = float(handed.time_module(mod, caller, n_spills_threshold))
        except Exception as exc:  # noqa: BLE001 -- only the reading's quality is at stake
            warn_once(
                f"fused-timing:{type(exc).__name__}",
                f"kselect: cannot time a fused form ({type(exc).__name__}: {exc}); Inductor's reading stands",
            )
            return original(self, mod, n_spills_threshold, *args, **kwargs)
        return ms, getattr(mod, "__file__", "")

    return wrapper


def _install() -> None:
    for (owner, name), wrap in _targets().items():
        original = getattr(owner, name)
        _originals[(owner, name)] = original
        setattr(owner, name, functools.wraps(original)(wrap(original)))


def uninstall() -> None:
    """Restore Inductor's methods and forget every handed set."""
    with _lock:
        for (owner, name), original in _originals.items():
            setattr(owner, name, original)
        _originals.clear()
        _handed.clear()
