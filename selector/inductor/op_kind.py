"""Which op Inductor is lowering at kselect's hooks, and which ops kselect leaves to stock Inductor.

kselect models the GEMMs mm, addmm, bmm and baddbmm (ranked as a bmm), and on the CPU a frozen
Linear's (MKL's or oneDNN's, read as an mm or addmm), in the dtypes its ranker has data for.
Every other op that reaches a hook -- `_int_mm`, `_scaled_mm`, `mm_plus_mm`, `_grouped_mm` /
`_scaled_grouped_mm`, convolutions, flex attention, ... -- is named by what Inductor is
lowering, never guessed from its input shapes (which read a grouped GEMM as a plain mm and
`a @ b + c @ d` as an addmm):
- the templates stage (`InductorChoices.get_template_configs`) by the op name Inductor passes;
- the choices stage (the preprocessing hook, which sees only ChoiceCallers) by the choices' own
  identity: the kind the templates stage stamped on each choice it built, else an extern
  kernel's name or a Triton template's name (CPP, CUTLASS, CK, ... serve several ops: no vote).
Such an op gets exactly Inductor's stock choices, built in the user's own GEMM search space --
never in the space kselect widened to for the ops it ranks -- and one INFO line per kind.
fp8 `_scaled_mm` is decided only where the serving ranker holds it (its `ops` and `scalings`,
selector/model/held_ops.py; a MeasuredRanker's from its table's problems) in that scaling kind,
without a bias; every other scaled_mm -- and any with no ranker here -- goes to stock as above.
`_grouped_mm` likewise, only where the serving ranker holds it (a grouped model joined to it,
selector/decide/grouped_ranker.py) in its dtype; its lowering never asks get_template_configs,
so only the choices stage decides it.
"""

from __future__ import annotations

import logging
import re
from typing import Callable

from kselect.kernels.flydsl.space import CHOICE_NAME as FLYDSL_CHOICE
from kselect.kernels.precision import gemm_dtype
from kselect.kernels.problem import DTYPE_BYTES, FP8_DTYPES, TORCH_DTYPE_NAMES
from kselect.selector.compat.choice_candidates import OP_STAMP
from kselect.selector.compat.signatures import scaled_scaling, size_hint
from kselect.selector.decide.rankers import RankerUnavailable
from kselect.selector.model.artifact import ModelError
from kselect.selector.model.held_ops import DEFAULT_OPS  # a ranker that names no `ops` holds these
from kselect.selector.warn import inform_once, warn_once

log = logging.getLogger("kselect.selector")

MODELLED = frozenset({"mm", "addmm", "bmm", "baddbmm", "linear"})
HELD_ONLY = frozenset({"scaled_mm", "grouped_mm"})  # decided only where the ranker says it holds them
STAMP = OP_STAMP  # the annotation the templates stage leaves on each choice it builds (compat/choice_candidates.stamp)

# Inductor's op names at get_template_configs that differ from their kind (read on torch 2.13:
# mm, mm-ah, addmm, bmm, baddbmm, int_mm, scaled_mm, mm_plus_mm; an underscored or "aten.<op>"
# spelling of the same op, as another release may pass, reads alike)
_OP_NAME_KINDS = {"mm-ah": "mm"}  # tuned_mm's AutoHeuristic call

# ExternKernelChoice names (torch 2.11 / 2.13) -> kind
_EXTERN_KINDS = {
    "mm": "mm",
    "mm_dtype": "mm",
    "_mkl_linear": "linear",  # a frozen fp32 Linear on the CPU: x @ W^T, its bias added apart
    "addmm": "addmm",
    "bias_addmm": "addmm",
    "bmm": "bmm",
    "bmm_dtype": "bmm",
    "baddbmm": "baddbmm",
    "_int_mm": "int_mm",
    "_scaled_mm": "scaled_mm",
    "_grouped_mm": "grouped_mm",
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

# Triton templates Inductor builds outside get_template_configs (so never stamped) -> kind
_TEMPLATE_KINDS = {
    "mm_plus_mm": "mm_plus_mm",
    "grouped_mm": "grouped_mm",
    "scaled_grouped_mm": "scaled_grouped_mm",
    "convolution2d": "conv",
    "convolution3d": "conv",
    "depthwise_conv1d": "conv",
    "scaled_mm_device_tma_epilogue_scaling": "scaled_mm",
    "scaled_mm_device_tma_main_loop_scaling": "scaled_mm",
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
            return "linear" if attr == "none" else f"linear+{attr}"
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


def _gemm_dtype_name(dtype, device):
    """kselect's name for an input's dtype ("tf32" for fp32 on CUDA in TF32), or the dtype as
    torch names it where kselect has no name for it (int8, fp8: never modelled)."""
    try:
        return gemm_dtype(dtype, device)
    except ValueError:
        return dtype


def dtype_name(dtype) -> str:
    name = str(dtype).replace("torch.", "")
    return TORCH_DTYPE_NAMES.get(name, name)


def unmodelled(kind: str, dtypes, ranker_dtypes: Callable[[], tuple | None]) -> str | None:
    """What kselect leaves to stock ("int_mm", "fp16 mm"), or None where it decides the op.
    `dtypes`: the op's input dtypes (none read: decided as before); `ranker_dtypes()`: those the
    ranker has data for (None: any), asked only for a modelled kind."""
    if kind not in MODELLED:
        return kind
    names = sorted({dtype_name(d) for d in dtypes})
    if not names:
        return None
    if len(names) > 1 or names[0] not in DTYPE_BYTES:
        return f"{'/'.join(names)} {kind}"
    known = ranker_dtypes()
    if known is not None and names[0] not in known:
        return f"{names[0]} {kind}"
    return None


def scaled_unheld(ranker, nodes) -> str | None:
    """What of this `_scaled_mm` (its input nodes) the ranker does not hold ("scaled_mm",
    "rowwise scaled_mm", "scaled_mm with a bias", ...), or None where it decides it. `ranker`
    None: no ranker serves this device -- stock, as for every unheld op."""
    if ranker is None or "scaled_mm" not in (getattr(ranker, "ops", None) or DEFAULT_OPS):
        return "scaled_mm"
    if len(nodes) != 4:
        return "scaled_mm with a bias"
    operands = sorted({dtype_name(n.get_dtype()) for n in nodes[:2]})
    if len(operands) != 1 or operands[0] not in FP8_DTYPES:
        # e5m2 (torchao's tensorwise backward casts the output gradient to it) or mixed fp8: no
        # kselect Problem describes it, whatever the ranker holds
        return f"{'/'.join(operands)} scaled_mm"
    dtype = operands[0]
    known = getattr(ranker, "dtypes", None)
    if known is not None and dtype not in known:
        return f"{dtype} scaled_mm"
    sizes = [[size_hint(s) for s in n.get_size()] for n in nodes]
    try:
        scaling = scaled_scaling(*sizes)
    except ValueError:
        return "scaled_mm of blockwise or MX scales"
    if scaling not in (getattr(ranker, "scalings", None) or ()):
        return f"{scaling} scaled_mm"
    return None


def grouped_unheld(ranker, nodes) -> str | None:
    """What of this `_grouped_mm` (its input nodes) the ranker does not hold ("grouped_mm",
    "fp16 grouped_mm"), or None where it decides it. `ranker` None: stock, as for every unheld op."""
    if ranker is None or "grouped_mm" not in (getattr(ranker, "ops", None) or DEFAULT_OPS):
        return "grouped_mm"
    known = getattr(getattr(ranker, "grouped", None) or ranker, "dtypes", None)
    dtype = dtype_name(nodes[0].get_dtype())
    if known is not None and dtype not in known:
        return f"{dtype} grouped_mm"
    return None


_HELD_CHECKS = {"scaled_mm": scaled_unheld, "grouped_mm": grouped_unheld}


class OpGate:
    """The selector's door: which ops it decides; the rest go to stock Inductor, each kind noted
    once. `holdings_for(device)` gives what the device's ranker decides (`ops`, `scalings`,
    `dtypes`, `grouped`; None: no ranker) without loading or warming one -- the question costs
    an undecided op's compile no model load (DeviceRankers.holdings); ModelError: a sidecar
    that cannot be read."""

    def __init__(self, holdings_for: Callable):
        self._holdings_for = holdings_for

    def _holdings(self, nodes):
        try:
            return self._holdings_for(nodes[0].get_device())
        except (ModelError, RankerUnavailable) as exc:  # an unreadable model: its one warning, as for any GEMM
            warn_once("model", f"kselect: cannot use cost model: {exc} -- stock autotuning")
            return None

    def _leaves(self, kind: str, nodes) -> bool:
        if kind in HELD_ONLY:
            return self._noted(_HELD_CHECKS[kind](self._holdings(nodes), nodes))
        if kind not in MODELLED:
            return self._noted(kind)

        def ranker_dtypes():
            try:
                return getattr(self._holdings_for(nodes[0].get_device()), "dtypes", None)
            except (ModelError, RankerUnavailable):  # the usual path reports it
                return None

        try:
            dtypes = [_gemm_dtype_name(n.get_dtype(), n.get_device()) for n in nodes]
        except (AttributeError, NotImplementedError):  # an input without a dtype: read as before
            dtypes = []
        return self._noted(unmodelled(kind, dtypes, ranker_dtypes))

    @staticmethod
    def _noted(why: str | None) -> bool:
        """True where `why` names what goes to stock; its INFO line once per kind."""
        if why is not None:
            inform_once(f"unmodelled:{why}", f"kselect: {why} is not modelled; stock autotuning")
        return why is not None

    def admit(self, op_name: str, kernel_inputs) -> tuple[str, bool]:
        """Templates stage: (the op's kind, whether kselect decides it; else Inductor builds its
        stock choices, untouched). An op kselect cannot read is left to stock: an error here
        must not widen or select what the user's own Inductor would have built."""
        kind = lowering_kind(op_name)
        return kind, self._decides(kind, kernel_inputs)

    def _decides(self, kind: str, kernel_inputs) -> bool:
        if kind not in MODELLED | HELD_ONLY:
            return not self._noted(kind)
        try:
            return not self._leaves(kind, kernel_inputs.nodes())
        except Exception as exc:  # noqa: BLE001 -- the gate must never break a compile
            _unreadable("templates", exc)
            return False

    def leaves_choices(self, choices) -> bool:
        """Choices stage: True where these choices go back to Inductor untouched (as at the
        templates stage, an op the gate cannot read among them)."""
        if not choices:
            return True
        try:
            return self._leaves(choices_kind(choices), list(getattr(choices[0], "input_nodes", None) or []))
        except Exception as exc:  # noqa: BLE001 -- the gate must never break a compile
            _unreadable("choices", exc)
            return True


def _unreadable(stage: str, exc: Exception) -> None:
    """The gate could not read the op: it goes to stock, with one warning per cause."""
    log.debug("kselect: op gate failed at the %s stage", stage, exc_info=True)
    warn_once(
        f"op-gate:{type(exc).__name__}",
        f"kselect: cannot read the op being lowered ({type(exc).__name__}: {exc}) -- stock autotuning",
    )
