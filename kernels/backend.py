"""The one Backend interface every GEMM kernel source implements, and its registry.

A backend answers five questions: its name; whether it can run here (and why not);
which candidates it offers for a problem; how to compile and run one candidate; and the
candidate's static config features. Timing lives in one harness
(`kselect.training.timing`); backends only hand it a zero-argument runner.

Backends register themselves with a decorator that carries their own import-time
condition, in the spirit of Inductor's `register_template_heuristic`.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterable

from .candidate import KNOBS, Candidate
from .problem import Problem

SEARCH_SPACES = ("default", "exhaustive")


class BackendError(ValueError):
    """Unknown backend name or a request a backend cannot serve."""


class CandidateError(RuntimeError):
    """A candidate failed to compile, launch or verify; `stage` says where."""

    def __init__(self, stage: str, reason: str):
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


class Backend(ABC):
    """Base class: subclasses set `name` and implement the abstract methods."""

    name: str = ""
    # The template families this backend may emit, in a fixed order (used as a feature).
    templates: tuple[str, ...] = ()

    @abstractmethod
    def availability(self, device: str = "cuda") -> Availability:
        """Can candidates run on `device` in this process? If not, say why."""

    @abstractmethod
    def candidates(self, problem: Problem, search_space: str = "exhaustive") -> list[Candidate]:
        """Every candidate this backend would offer Inductor for `problem`, deterministic order."""

    @abstractmethod
    def compile(self, candidate: Candidate, problem: Problem):
        """Build what `runner` needs; raise CandidateError('compile', reason) on failure."""

    @abstractmethod
    def runner(self, compiled, operands) -> Callable[[], "object"]:
        """A zero-argument callable that runs the kernel on `operands` and returns C."""

    def precompile(self, items: Iterable[tuple[Candidate, Problem]], workers: int = 1, wait: bool = True) -> dict:
        """Compile many candidates ahead of timing; returns {(candidate, compile_key): error}.

        The default compiles sequentially (and so always waits); backends with expensive
        compiles override it, and may compile in the background when `wait` is False.
        """
        errors = {}
        for cand, prob in items:
            try:
                self.compile(cand, prob)
            except CandidateError as exc:
                errors[(cand, prob)] = str(exc)
        return errors

    def config_features(self, candidate: Candidate) -> dict[str, float]:
        """Static knobs as numbers; absent knobs are 0 so every backend shares one schema."""
        kw = candidate.kwargs  # one dict, not one per knob (~2,400 candidates at first ranking)
        return {k: float(kw.get(k, 0) or 0) for k in KNOBS}


_REGISTRY: dict[str, type[Backend]] = {}
_INSTANCES: dict[str, Backend] = {}
# Modules that define the built-in backends; imported lazily on first lookup.
_BUILTIN_MODULES = {
    "aten": "kselect.kernels.aten.backend",
    "triton": "kselect.kernels.triton.backend",
    "flydsl": "kselect.kernels.flydsl.backend",
}


def register_backend(name: str, register: bool = True):
    """Class decorator: make a Backend subclass findable by `name` (when `register`)."""

    def wrap(cls: type[Backend]) -> type[Backend]:
        if register:
            cls.name = name
            _REGISTRY[name] = cls
        return cls

    return wrap


def get_backend(name: str) -> Backend:
    """The singleton instance of backend `name`, or a BackendError listing the known ones."""
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
    if name not in _REGISTRY:
        raise BackendError(f"unknown backend {name!r}: known backends are {sorted(_BUILTIN_MODULES)}")
    if name not in _INSTANCES:
        _INSTANCES[name] = _REGISTRY[name]()
    return _INSTANCES[name]


def shared_knobs(candidate: Candidate) -> dict[str, float]:
    """The candidate's knobs in the shared schema (KNOBS), as its backend maps them (FlyDSL's
    TILE_M is BLOCK_M, ...); candidates of unregistered backends (CPP, CUTLASS) as they are.
    The dataset and the features both read knobs through here, so they cannot disagree."""
    try:
        backend = get_backend(candidate.backend)
    except BackendError:
        return {k: float(candidate.get(k, 0) or 0) for k in KNOBS}
    return backend.config_features(candidate)


def known_backends() -> list[str]:
    return sorted(set(_BUILTIN_MODULES) | set(_REGISTRY))


def parse_backends(spec: str | Iterable[str]) -> list[Backend]:
    """'aten,triton' -> backend instances, rejecting unknown names with a clear error."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n]
    if not names:
        raise BackendError("no backend named: pass e.g. --backends aten,triton")
    return [get_backend(n) for n in names]
