"""The selector's settings, declared once: `SelectorSettings`, a frozen dataclass whose fields
carry their environment variable, kind (type, range, choices) and help
(kselect/kernels/settings.py holds the machinery).

Derived from it: the KSELECT_* environment table (`OPTIONS`, `read()`, `describe()`), the
keywords of enable() / Selector() and their checks (`check_settings()`), `Selector.settings()`,
which settings enter the decision-cache key and Inductor's FX-graph cache key
(`decision_fields()`), the policy's default constants (decide/policy.py) and the bench flags
(training/bench/common.py).
"""

from __future__ import annotations

import dataclasses
import numbers
import os

from kselect.kernels import settings as declared
from kselect.kernels.settings import (  # noqa: F401 -- the selector's errors and path rule, re-exported
    Choice,
    Flag,
    Kind,
    Number,
    OptionalPath,
    OptionError,
    SettingError,
    UnknownSettingError,
    expand_path,
    setting,
)

MODES = ("off", "verify", "predict")
VERIFY_TIMINGS = ("auto", "kselect", "inductor")
COMPILE_IN = ("threads", "workers")
SEARCH_SPACES = ("DEFAULT", "EXHAUSTIVE")
# decides=: the modes in which a setting changes which kernels are kept
BOTH, VERIFY, PREDICT = ("verify", "predict"), ("verify",), ("predict",)


class ModelSource(OptionalPath):
    """A booster path (expanded), a loaded model object, or None (the shipped model)."""

    name = "path"

    def check(self, field, value):
        if isinstance(value, (str, os.PathLike)) or value is None:
            return super().check(field, value)
        if isinstance(value, (bytes, numbers.Number, list, tuple, dict)):
            raise SettingError(f"{field} must be a path, a loaded CostModel or None, got {type(value).__name__}")
        return value


class RankerObject(Kind):
    """None or any object with rank(problem, candidates)."""

    name = "ranker"

    def check(self, field, value):
        if value is not None and not callable(getattr(value, "rank", None)):
            raise SettingError(f"{field} must have a rank(problem, candidates) method, got {type(value).__name__}")
        return value


class SearchSpace(Kind):
    """Inductor's GEMM search space while kselect is on (any case), or None: the user's."""

    name = "search space"

    def check(self, field, value):
        if isinstance(value, str) and value.upper() in SEARCH_SPACES:
            return value.upper()
        if value is not None and value != "":
            raise SettingError(f"{field} must be one of {SEARCH_SPACES} or None, got {value!r}")
        return None


@dataclasses.dataclass(frozen=True)
class SelectorSettings(declared.Settings):
    """Every setting of the selector: enable()'s and Selector()'s keywords, most also
    KSELECT_* environment variables. `decides` (metadata): the modes in which the setting
    changes which kernels are kept, so it enters the decision-cache and FX-graph cache keys."""

    mode: str = setting(
        "verify",
        Choice(*MODES),
        env="KSELECT_MODE",
        env_default="off",
        decides=BOTH,
        help=(
            "off "
            "= stock Inductor; verify = benchmark the model's adaptive top-k (+ATen); predict = take the "
            "model's top-1, benchmark nothing"
        ),
    )
    k: int = setting(
        4, Number(int, 1), env="KSELECT_K", decides=BOTH, help=("verify mode: most candidates kept per template stage")
    )
    cache_dir: str | None = setting(
        None,
        OptionalPath(),
        env="KSELECT_CACHE_DIR",
        help=("directory of the persistent decision cache (none = no cache)"),
    )
    model: object = setting(
        None,
        ModelSource(),
        env="KSELECT_MODEL",
        help=("cost-model booster file, or a loaded CostModel (none = the shipped model for this GPU)"),
    )
    keep_aten: bool = setting(
        True, Flag(), decides=BOTH, help=("verify mode: always keep an ATen choice among the measured (the safety net)")
    )
    ranker: object = setting(
        None,
        RankerObject(),
        help=("any object with rank(problem, candidates), used instead of a model (e.g. a MeasuredRanker on the CPU)"),
    )
    search_space: str | None = setting(
        "EXHAUSTIVE",
        SearchSpace(),
        help=(
            "the GEMM config list Inductor "
            "builds for a GEMM kselect decides (ranked before code generation, so the whole EXHAUSTIVE space "
            "costs little), in force inside that GEMM's templates stage alone: Inductor's own setting stays "
            "the user's; None ranks the user's. A GEMM kselect cannot rank is narrowed back to the user's own "
            "space"
        ),
    )
    verify_timing: str = setting(
        "auto",
        Choice(*VERIFY_TIMINGS),
        env="KSELECT_VERIFY_TIMING",
        help=(
            "verify "
            "mode: who times the kept choices -- kselect (the collector's CUDA-graph harness; checks each "
            "result against ATen), inductor (its autotune benchmark), auto (kselect on GPUs, inductor on "
            "the CPU)"
        ),
    )
    epilogue_fusion: bool = setting(
        False,
        Flag(),
        env="KSELECT_EPILOGUE_FUSION",
        decides=BOTH,
        help=(
            "verify and predict: for a GEMM whose pointwise epilogue a template can fuse, hand "
            "Inductor kselect's few -- the kept choices, the best-ranked fusing template and ATen -- so "
            "its epilogue-fusion benchmark picks among them (GPUs); its pick is cached "
            "(kernels/epilogue.py)"
        ),
    )
    time_fused: bool = setting(
        False,
        Flag(),
        env="KSELECT_TIME_FUSED",
        decides=VERIFY,
        help=(
            "verify mode on GPUs: for a GEMM whose fusable epilogue holds an activation (ReLU, GELU, "
            "SiLU), time each kept choice's fused form -- the template with that epilogue, as Inductor "
            "generates it at its epilogue-fusion benchmark, against ATen plus the epilogue's own kernel "
            "-- with kselect's harness and cache that pick; other epilogues keep epilogue_fusion's path "
            "(selector/verify/fused_forms.py)"
        ),
    )
    adaptive_k: bool = setting(
        True,
        Flag(),
        env="KSELECT_ADAPTIVE_K",
        decides=VERIFY,
        help=("verify mode: keep KSELECT_MIN_K..KSELECT_K by the model's score gaps (on), or always KSELECT_K (off)"),
    )
    min_k: int = setting(
        1,
        Number(int, 1),
        env="KSELECT_MIN_K",
        decides=VERIFY,
        help=(
            "verify mode, "
            "adaptive: never keep fewer ranked candidates (2: held out 98.5 % of the measured best kernel "
            "vs 94.4 % at 1, for ~1 s more compile per GEMM on the H200; "
            "reports/2026-12-05-cost-model-h200-bf16/adaptive-k.json, "
            "reports/2026-12-03-decode-launch-time-verify-k-decision-latency)"
        ),
    )
    aten_margin: float = setting(
        2.0,
        Number(float, 0),
        env="KSELECT_ATEN_MARGIN",
        decides=PREDICT,
        help=(
            "predict "
            "mode: pick a Triton template only if it out-scores ATen by this many standard deviations of "
            "the GEMM's scores (0 = the top-1 whatever it is); held out on the re-timed labels 2 keeps "
            "template picks (each compiled, ~0.6 s on the H200) to 0.25 % of GEMMs at 92.33 % of the best "
            "kernel; 0.5: 3.5 %, 92.50 %; 0: 5.7 %, 93.79 % "
            "(reports/2026-12-05-cost-model-h200-bf16/compile-aware.json)"
        ),
    )
    early_decision: bool = setting(
        True,
        Flag(),
        env="KSELECT_EARLY_DECISION",
        help=(
            "on CUDA: decide "
            "over kselect's own enumeration of the GEMM space before Inductor generates it, so only the "
            "kept configs are built (off: decide over Inductor's ~2,400 generated choices; same decision, "
            "more compile time)"
        ),
    )
    release_memory: bool = setting(
        True,
        Flag(),
        env="KSELECT_RELEASE_MEMORY",
        help=(
            "verify mode on "
            "GPUs: after measuring a kept set, free the cuBLAS workspace its stream made and the caching "
            "allocator's unused blocks (off: keep them, the behaviour without the release)"
        ),
    )
    warm_while_compiling: bool = setting(
        True,
        Flag(),
        env="KSELECT_WARM_WHILE_COMPILING",
        help=(
            "verify "
            "mode on GPUs: keep the GPU busy while the kept templates compile, so its clocks are up when "
            "the timing starts (off: it idles through the compile and warms for 100 ms before the timing: "
            "~0.1 s more per measured set, a tenth of the heat at the compile's end)"
        ),
    )
    compile_in: str = setting(
        "threads",
        Choice(*COMPILE_IN),
        env="KSELECT_COMPILE_IN",
        help=(
            "verify "
            "mode on GPUs: where the kept Triton templates compile -- threads of the compiling process, or "
            "workers: Inductor's compile-worker processes, warmed as a compile starts (turns "
            "KSELECT_WARM_START on; slower than threads on the H200's one-layer decode, "
            "reports/2026-12-05-decode-compile-test-prefill-steady-state)"
        ),
    )
    compile_budget: float = setting(
        1.5,
        Number(float, 0),
        env="KSELECT_COMPILE_BUDGET",
        decides=VERIFY,
        help=(
            "verify mode on CUDA GPUs: pass over a kept Triton template predicted to compile more "
            "than this many times as long as the top-1 (or the median compile, when the top-1 is quicker), for the next "
            "candidate; the kept set compiles in parallel, so its slowest compile is the measurement's wait "
            "(selector/model/compile_time_model.py; 0 = off)"
        ),
    )
    measured_picks: bool = setting(
        True,
        Flag(),
        env="KSELECT_MEASURED_PICKS",
        decides=PREDICT,
        help=(
            "predict mode, the shipped models: a GEMM its card's datasets or bench runs measured takes the measured "
            "pick (models/picks/<card>.json: the fastest candidate where it beat ATen beyond noise, else "
            "ATen) with no benchmark; every other GEMM is ranked by the model (off: the model ranks all)"
        ),
    )
    warm_start: bool = setting(
        True,
        Flag(),
        env="KSELECT_WARM_START",
        help=(
            "on CUDA: as a compile "
            "starts, prepare Triton's GPU target in a background thread (a C build with a cold Triton "
            "cache, 0.34 s on the H200 host) and warm Inductor's compile workers, so neither waits on the "
            "compile's first Triton kernel (selector/warmup/triton_setup.py; off: the compile pays that "
            "set-up itself, as stock does)"
        ),
    )

    def check_together(self) -> None:
        if self.min_k > self.k:
            raise SettingError(f"min_k ({self.min_k}) must not exceed k ({self.k})")

    def keywords(self) -> dict:
        """The keywords that make these settings again: SelectorSettings(**s.keywords()) == s."""
        return declared.as_keywords(self)

    def decision_fields(self) -> dict:
        """{setting: value} of the settings that change which kernels this mode keeps (field
        metadata `decides`): what the decision-cache key and Inductor's FX-graph cache key hold."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if self.mode in f.metadata.get("decides", ())
        }


DEFAULTS = SelectorSettings()
OPTIONS = declared.options(SelectorSettings)  # the KSELECT_* environment options
SETTINGS = declared.field_names(SelectorSettings)  # every enable() / Selector() keyword


def check_settings(**given) -> dict:
    """The given keywords of enable() / Selector(), checked as SelectorSettings checks them
    (type, range, choices; `min_k <= k`, the other at its default) and normalised (paths with
    `~` and environment variables expanded); raises SettingError naming the first bad one."""
    checked = SelectorSettings.from_keywords(**given)
    return {name: getattr(checked, name) for name in given}


def keyword_help() -> str:
    """Every keyword with its kind, default and help (enable()'s docstring ends with it)."""
    return declared.describe_keywords(SelectorSettings)


def read(environ=None) -> dict:
    """{setting: value} of every KSELECT_* option, parsed from `environ` (default os.environ)."""
    return declared.env_values(SelectorSettings, environ)


def describe() -> str:
    """Help text of every option: name, type, default, description."""
    return declared.describe(SelectorSettings)


def print_options() -> None:
    print(describe())
