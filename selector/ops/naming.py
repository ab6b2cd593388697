"""Which op Inductor is lowering at kselect's hooks, named by what Inductor lowers, never guessed
from its input shapes (which read a grouped GEMM as a plain mm and `a @ b + c @ d` as an addmm):
- the templates stage (`InductorChoices.get_template_configs`) by the op name Inductor passes;
- the choices stage (the preprocessing hook, which sees only ChoiceCallers) by the choices' own
  identity: the kind the templates stage stamped on each choice it built, else an extern
  kernel's name or a Triton template's name (CPP, CUTLASS, CK, ... serve several ops: no vote).
The decided kinds' names come from their op modules (registry.py); the undecided ones' are
listed here, only to name them in the gate's INFO line.
"""

from __future__ import annotations

import re

from kselect.kernels.flydsl.space import CHOICE_NAME as FLYDSL_CHOICE
from kselect.kernels.op_names import LINEAR as _LINEAR  # oneDNN's `_linear_pointwise` below reads as a Linear
from kselect.selector.compat.choice_candidates import OP_STAMP
from kselect.selector.ops import registry

STAMP = OP_STAMP  # the annotation the templates stage leaves on each choice it builds (compat/choice_candidates.stamp)

# Inductor's op names at get_template_configs that differ from their kind (read on torch 2.13:
# mm, mm-ah, addmm, bmm, baddbmm, int_mm, scaled_mm, mm_plus_mm; an underscored or "aten.<op>"
# spelling of the same op, as another release may pass, reads alike)
_OP_NAME_KINDS = {name: k.name for k in registry.KINDS.values() for name in k.lowering_names}

# ExternKernelChoice names (torch 2.11 / 2.13) of ops kselect does not decide -> kind
_UNDECIDED_EXTERNS = {
    "_int_mm": "int_mm",
    "_scaled_grouped_mm": "scaled_grouped_mm",
    "_mm_plus_mm": "mm_plus_mm",
    "convolution": "conv",
    "conv1x1_via_mm": "conv",
    "call_aten_dw": "conv",
    "call_aten_dx": "conv",
    "_linear_pointwise.binary": "linear+binary",  # oneDNN's Linear with another tensor's add fused
    "qlinear_pointwise": "qlinear_pointwise",
    "qlinear_pointwise.binary": "qlinear_pointwise",
    "_sparse_semi_structured_mm": "sparse_semi_structured_mm",
    "_weight_int8pack_mm": "weight_int8pack_mm",
    "int4mm_packed_weight_cpu": "weight_int4pack_mm",
}
_EXTERN_KINDS = {
    **_UNDECIDED_EXTERNS,
    **{name: k.name for k in registry.KINDS.values() for name in k.extern_names},
}

# Triton templates Inductor builds outside get_template_configs (so never stamped) -> kind
_TEMPLATE_KINDS = {
    "mm_plus_mm": "mm_plus_mm",
    "scaled_grouped_mm": "scaled_grouped_mm",
    "convolution2d": "conv",
    "convolution3d": "conv",
    "depthwise_conv1d": "conv",
    **{name: k.name for k in registry.KINDS.values() for name in k.template_names},
}
# Triton templates several GEMM lowerings share (mm, addmm, _int_mm and _scaled_mm all build
# `triton::mm`): they name no op
_SHARED_TEMPLATES = frozenset(
    {
        "mm",
        "bmm",
        "mm_persistent_tma",
        "mm_persistent",
        "blackwell_ws_persistent_device_tma",
        "decompose_k",
        "contiguous_mm",
        "contiguous_addmm",
    }
)


def lowering_kind(op_name: str) -> str:
    """The kind of the op Inductor names at get_template_configs ("mm", "int_mm", ...)."""
    name = str(op_name).lower().removeprefix("aten.").removesuffix(".default").lstrip("_")
    return _OP_NAME_KINDS.get(name, name)


def choice_vote(choice) -> str | None:
    """The op kind one ChoiceCaller names by its own identity, or None where it names none."""
    annotations = getattr(choice, "annotations", None)
    if isinstance(annotations, dict) and annotations.get(STAMP):
        return annotations[STAMP]
    name = str(getattr(choice, "name", "") or "")
    if type(choice).__name__ == "ExternKernelCaller":
        name = str(getattr(getattr(choice, "choice", None), "name", name))
        if name.startswith(FLYDSL_CHOICE + "_"):  # kselect's own FlyDSL join: flydsl_gemm_<op>
            return lowering_kind(name[len(FLYDSL_CHOICE) + 1 :])
        if name == "_linear_pointwise":  # oneDNN's Linear (bf16, fp16, dynamic shapes on the CPU)
            # with a fused activation ("attr") in every choice's time, it is no bare GEMM
            attr = str((getattr(choice, "kwargs", None) or {}).get("attr", "none"))
            return _LINEAR if attr == "none" else f"{_LINEAR}+{attr}"
        return _EXTERN_KINDS.get(name)  # a user's config.external_matmul names no op
    if "Triton" in type(choice).__name__ and name.startswith("triton_"):
        template = re.sub(r"_\d+$", "", name[len("triton_") :])  # its per-compile counter off
        if template in _SHARED_TEMPLATES:
            return None
        return _TEMPLATE_KINDS.get(template, template)  # flex attention and the like: their own
    return None


def choices_kind(choices) -> str:
    """The op kind a preprocessing call's choices name together: one kind; "unidentified" where
    none names an op; the kinds joined by "+" where they disagree (never read as either)."""
    kinds = {k for k in map(choice_vote, choices) if k}
    if len(kinds) == 1:
        return kinds.pop()
    return "+".join(sorted(kinds)) if kinds else "unidentified op"
