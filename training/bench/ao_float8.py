"""torchao's float8 Linear as its users apply it, on the SwiGLU MLP of mlp_models.py (Llama-3-8B's
widths): every Linear's GEMMs become fp8 `torch._scaled_mm` calls, the client kselect's fp8 path
serves. `swiglu-mlp-fp8-<recipe>`, recipe tensorwise or rowwise:

- train: `torchao.float8.convert_to_float8_training(mlp, config=Float8LinearConfig.from_recipe_name(
  recipe))` (torchao 0.18's training API); the step is mlp_models' (y = x + mlp(x), MSE, AdamW).
  Rowwise scales its forward GEMM by rows and runs the two backward GEMMs (no fast accumulation)
  as tensorwise `_scaled_mm` with unit scales, the row scales applied after -- so one rowwise
  step holds both scaling kinds;
- prefill (M = batch x seq rows) and decode (M = batch): `torchao.quantization.quantize_(mlp,
  Float8DynamicActivationFloat8WeightConfig(granularity=PerTensor() / PerRow()))`, its
  inference API. torchao 0.18 refuses that config without an sm_89+ GPU (or MI300+, XPU).

The correctness anchor is the same MLP unconverted, in fp32: fp8 rounding makes a compiled step
differ from eager's (Inductor keeps fused bf16 intermediates in fp32, which moves values across
fp8 rounding boundaries), so the bench's half-precision rule judges it by its distance from the
fp32 model against eager fp8's own (e2e_worker.judge; docs/e2e.md)."""

from __future__ import annotations

from kselect.training.bench.e2e_cases import InferenceCase

# torch, torchao and the MLP are imported where used: the bench's supervisor reads the names alone
RECIPES = ("tensorwise", "rowwise")
NAME = "swiglu-mlp-fp8-"


def model_names() -> list[str]:
    """The bench's names of these models: one per recipe, and its tiny CPU-test size."""
    return [f"{NAME}{r}{tiny}" for r in RECIPES for tiny in ("", "-tiny")]


def _convert_for_training(mlp, recipe: str) -> None:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    convert_to_float8_training(mlp, config=Float8LinearConfig.from_recipe_name(recipe))


def _quantize_for_inference(mlp, recipe: str) -> None:
    """torchao's float8 inference API on `mlp`; torchao's hardware check (an AssertionError) as a
    RuntimeError naming it."""
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, PerTensor, quantize_

    config = Float8DynamicActivationFloat8WeightConfig(granularity=PerRow() if recipe == "rowwise" else PerTensor())
    try:
        quantize_(mlp, config)
    except AssertionError as exc:
        raise RuntimeError(f"torchao's float8 inference quantize_ cannot run here: {exc}") from exc


def _fp32_twin(shape, mlp, device):
    """A callable giving, once, `mlp`'s unconverted fp32 copy (taken now, before torchao converts
    it); once, so the bench's reference frees its memory after use."""
    import torch

    from kselect.training.bench.mlp_models import SwigluMlp

    with torch.device(device):
        twin = SwigluMlp(shape)
    twin.load_state_dict({k: v.float() for k, v in mlp.state_dict().items()})
    held = [twin]
    return lambda: held.pop()


def build(name: str, spec: dict, device, dtype):
    """(module, case, note) of `name` (model_names()) for spec's workload."""
    import torch

    from kselect.training.bench import mlp_models

    recipe = name.removeprefix(NAME).removesuffix("-tiny")
    if recipe not in RECIPES:
        raise ValueError(f"unknown torchao float8 model {name!r}; known: {', '.join(model_names())}")
    shape = (mlp_models.TINY if name.endswith("-tiny") else mlp_models.SHAPES)["swiglu-mlp"]
    workload = spec["workload"]
    mlp = mlp_models.new_module("swiglu-mlp", shape, spec, device, dtype)
    reference = _fp32_twin(shape, mlp, device)
    note = f"{shape.note}; torchao float8 {recipe}"
    if workload == "train":
        _convert_for_training(mlp, recipe)
        case = mlp_models.train_case(mlp, shape, spec, device, dtype, fp32_module=reference)
        return mlp, case, f"{note} training (convert_to_float8_training), M = {case.tokens_per_step}"
    _quantize_for_inference(mlp, recipe)
    rows = spec["batch"] * (1 if workload == "decode" else spec["seq"])
    gen = torch.Generator().manual_seed(spec["seed"] + 1000)
    x = torch.randn(rows, shape.hidden, generator=gen).to(device=device, dtype=dtype)

    def fp32_reference():
        return reference()(x.float())

    case = InferenceCase(mlp, (x,), rows, fp32_reference)
    return mlp, case, f"{note} inference (quantize_ Float8DynamicActivationFloat8WeightConfig), M = {rows}"
