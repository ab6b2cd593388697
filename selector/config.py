"""The selector's settings, declared and checked once: every KSELECT_* environment option
(typed, with its help) and every enable() / Selector() keyword.

Modelled on FlyDSL's env manager: one table is the single source of truth, `read()` parses
the environment against it (bad values raise, naming the variable) and `describe()` prints it.
`check_settings()` checks the keywords (types, ranges, choices, `min_k <= k`) and expands
`~` and environment variables in paths; enable() calls it before touching the active selector.
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable

MODES = ("off", "verify", "predict")
VERIFY_TIMINGS = ("auto", "kselect", "inductor")
COMPILE_IN = ("threads", "workers")


class OptionError(ValueError):
    """An environment option with a value outside its declared type or choices."""


@dataclass(frozen=True)
class Option:
    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    choices: tuple = ()

    def parse(self, raw: str | None) -> Any:
        if raw is None or raw == "":
            return self.default
        try:
            value = self.type(raw.strip())
        except ValueError:
            raise OptionError(f"{self.name}={raw!r}: expected {self.type.__name__}") from None
        if self.choices and value not in self.choices:
            raise OptionError(f"{self.name}={raw!r}: expected one of {self.choices}")
        return value


def _positive_int(raw: str) -> int:
    v = int(raw)
    if v < 1:
        raise ValueError(raw)
    return v


_positive_int.__name__ = "int >= 1"


def _on_off(raw: str) -> bool:
    v = raw.lower()
    if v in ("1", "on", "true", "yes"):
        return True
    if v in ("0", "off", "false", "no"):
        return False
    raise ValueError(raw)


_on_off.__name__ = "on|off"


def _non_negative_float(raw: str) -> float:
    v = float(raw)
    if not v >= 0:  # also refuses nan
        raise ValueError(raw)
    return v


_non_negative_float.__name__ = "float >= 0"

OPTIONS: tuple[Option, ...] = (
    Option("KSELECT_MODE", str.lower, "off", "off = stock Inductor; verify = benchmark the model's "
           "adaptive top-k (+ATen); predict = take the model's top-1, benchmark nothing", MODES),
    Option("KSELECT_K", _positive_int, 4, "verify mode: most candidates kept per template stage"),
    Option("KSELECT_CACHE_DIR", str, "", "directory of the persistent decision cache (empty = no cache)"),
    Option("KSELECT_MODEL", str, "", "cost-model booster file (empty = the shipped model for this GPU)"),
    Option("KSELECT_VERIFY_TIMING", str.lower, "auto", "verify mode: who times the kept choices -- kselect "
           "(the collector's CUDA-graph harness; checks each result against ATen), inductor (its autotune "
           "benchmark), auto (kselect on GPUs, inductor on the CPU)", VERIFY_TIMINGS),
    Option("KSELECT_EPILOGUE_FUSION", _on_off, False, "verify mode on GPUs: also keep a template that can "
           "fuse the GEMM's pointwise epilogue and charge ATen the separate epilogue kernel when "
           "picking the winner (selector/inductor/epilogue.py)"),
    Option("KSELECT_ADAPTIVE_K", _on_off, True, "verify mode: keep KSELECT_MIN_K..KSELECT_K by the "
           "model's score gaps (on), or always KSELECT_K (off)"),
    Option("KSELECT_MIN_K", _positive_int, 1, "verify mode, adaptive: never keep fewer ranked candidates "
           "(2: held out 98.5 % of the measured best kernel vs 94.4 % at 1, for ~1 s more compile per "
           "GEMM on the H200; reports/2026-12-05-cost-model-h200-bf16/adaptive-k.json, reports/2026-12-03-decode-launch-time-verify-k-decision-latency)"),
    Option("KSELECT_ATEN_MARGIN", _non_negative_float, 2.0, "predict mode: pick a Triton template only "
           "if it out-scores ATen by this many standard deviations of the GEMM's scores (0 = the top-1 "
           "whatever it is); held out on the re-timed labels 2 keeps template picks (each compiled, "
           "~0.6 s on the H200) to 0.25 % of GEMMs at 92.33 % of the best kernel; 0.5: 3.5 %, 92.50 %; "
           "0: 5.7 %, 93.79 % (reports/2026-12-05-cost-model-h200-bf16/compile-aware.json)"),
    Option("KSELECT_EARLY_DECISION", _on_off, True, "on CUDA: decide over kselect's own enumeration of "
           "the GEMM space before Inductor generates it, so only the kept configs are built (off: decide "
           "over Inductor's ~2,400 generated choices; same decision, more compile time)"),
    Option("KSELECT_RELEASE_MEMORY", _on_off, True, "verify mode on GPUs: after measuring a kept set, free "
           "the cuBLAS workspace its stream made and the caching allocator's unused blocks (off: keep them, "
           "the behaviour without the release)"),
    Option("KSELECT_WARM_WHILE_COMPILING", _on_off, True, "verify mode on GPUs: keep the GPU busy while "
           "the kept templates compile, so its clocks are up when the timing starts (off: it idles through "
           "the compile and warms for 100 ms before the timing: ~0.1 s more per measured set, a tenth of "
           "the heat at the compile's end)"),
    Option("KSELECT_COMPILE_IN", str.lower, "threads", "verify mode on GPUs: where the kept Triton "
           "templates compile -- threads of the compiling process, or workers: Inductor's compile-worker "
           "processes, warmed as a compile starts (turns KSELECT_WARM_START on; slower than threads on "
           "the H200's one-layer decode, reports/2026-12-05-decode-compile-test-prefill-steady-state)", COMPILE_IN),
    Option("KSELECT_COMPILE_BUDGET", _non_negative_float, 1.5, "verify mode on CUDA GPUs: pass over a kept "
           "Triton template predicted to compile more than this many times as long as the top-1 (or the "
           "median compile, when the top-1 is quicker), for the next candidate; the kept set compiles in "
           "parallel, so its slowest compile is the measurement's wait (selector/model/compile_cost.py; 0 = off)"),
    Option("KSELECT_WARM_START", _on_off, True, "on CUDA: as a compile starts, prepare Triton's GPU "
           "target in a background thread (a C build with a cold Triton cache, 0.34 s on the H200 host) "
           "and warm Inductor's compile workers, so neither waits on the compile's first Triton kernel "
           "(selector/warmup/triton_setup.py; off: the compile pays that set-up itself, as stock does)"),
)


# -- the keywords of enable() / Selector(), checked in one place ----------------------------
SEARCH_SPACES = ("DEFAULT", "EXHAUSTIVE")


class SettingError(ValueError):
    """An enable() / Selector() keyword of the wrong type, outside its range or choices."""


def expand_path(path) -> str:
    """A path as the user meant it: `~` and environment variables ($HOME, ${XDG_CACHE_HOME})
    expanded."""
    return os.path.expandvars(os.path.expanduser(os.fspath(path)))


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _positive(name: str, v) -> int:
    if not _is_int(v):
        raise SettingError(f"{name} must be an int >= 1, got {type(v).__name__} {v!r}")
    if v < 1:
        raise SettingError(f"{name} must be >= 1, got {v}")
    return int(v)


def _non_negative(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise SettingError(f"{name} must be a number >= 0, got {type(v).__name__} {v!r}")
    if not (math.isfinite(v) and v >= 0):
        raise SettingError(f"{name} must be a finite number >= 0, got {v}")
    return float(v)


def _flag(name: str, v) -> bool:
    if isinstance(v, bool) or type(v).__name__ == "bool_":   # numpy's bool too; never "off" or 0
        return bool(v)
    raise SettingError(f"{name} must be True or False, got {type(v).__name__} {v!r}")


def _one_of(name: str, choices: tuple):
    def check(_n, v):
        if not isinstance(v, str) or v not in choices:
            raise SettingError(f"{name} must be one of {choices}, got {v!r}")
        return v
    return check


def _path_or_none(name: str, v):
    if v is None or v == "":
        return None
    if isinstance(v, (str, os.PathLike)):
        return expand_path(v)
    raise SettingError(f"{name} must be a path (str or os.PathLike) or None, got {type(v).__name__}")


def _model(name: str, v):
    """A booster path (expanded), a loaded model object, or None (the shipped model)."""
    if isinstance(v, (str, os.PathLike)) or v is None or v == "":
        return _path_or_none(name, v)
    if isinstance(v, (bytes, numbers.Number, list, tuple, dict)):
        raise SettingError(f"model must be a path, a loaded CostModel or None, got {type(v).__name__}")
    return v


def _ranker(name: str, v):
    if v is not None and not callable(getattr(v, "rank", None)):
        raise SettingError(f"ranker must have a rank(problem, candidates) method, got {type(v).__name__}")
    return v


def _search_space(name: str, v):
    if v is None or v == "":
        return None
    if not isinstance(v, str) or v.upper() not in SEARCH_SPACES:
        raise SettingError(f"search_space must be one of {SEARCH_SPACES} or None, got {v!r}")
    return v.upper()


# keyword -> check(name, value) -> the value the selector uses (paths expanded, numbers typed)
SETTINGS: dict[str, Callable[[str, Any], Any]] = {
    "mode": _one_of("mode", MODES), "k": _positive, "model": _model, "cache_dir": _path_or_none,
    "keep_aten": _flag, "ranker": _ranker, "search_space": _search_space,
    "verify_timing": _one_of("verify_timing", VERIFY_TIMINGS), "epilogue_fusion": _flag,
    "adaptive_k": _flag, "min_k": _positive, "aten_margin": _non_negative, "early_decision": _flag,
    "release_memory": _flag, "warm_while_compiling": _flag, "compile_in": _one_of("compile_in", COMPILE_IN),
    "compile_budget": _non_negative, "warm_start": _flag,
}


def check_settings(**given) -> dict:
    """The keywords of enable() / Selector(), each checked (type, range, choices; `min_k <= k`)
    and normalised (paths with `~` and environment variables expanded); raises SettingError
    naming the first bad one. Nothing is touched: call it before changing any state."""
    unknown = sorted(set(given) - set(SETTINGS))
    if unknown:
        raise SettingError(f"unknown setting(s) {unknown}: expected some of {sorted(SETTINGS)}")
    out = {name: SETTINGS[name](name, value) for name, value in given.items()}
    if "k" in out and "min_k" in out and out["min_k"] > out["k"]:
        raise SettingError(f"min_k ({out['min_k']}) must not exceed k ({out['k']})")
    return out


def read(environ=None) -> dict:
    """{option name without prefix, lower case: parsed value} from `environ` (default os.environ)."""
    env = os.environ if environ is None else environ
    return {o.name[len("KSELECT_"):].lower(): o.parse(env.get(o.name)) for o in OPTIONS}


def describe() -> str:
    """Help text of every option: name, type, default, description."""
    lines = []
    for o in OPTIONS:
        ch = f" {{{', '.join(o.choices)}}}" if o.choices else ""
        lines.append(f"{o.name} ({o.type.__name__}{ch}, default {o.default!r}): {o.help}")
    return "\n".join(lines)


def print_options() -> None:
    print(describe())
