"""Which ops (and, for fp8 `_scaled_mm`, which scaling kinds) and which dtypes a cost model
ranks, read from its sidecar.

Sidecar fields (top level, or in its `training` card):
- `ops`: the Problem ops it holds, e.g. ["mm", "addmm", "bmm", "scaled_mm"]; unsaid, the GEMMs
  every model before this field held: mm, addmm, bmm;
- `scalings`: the scaling kinds of its scaled_mm data (unsaid: both kinds of kernels/problem.py);
- `dtypes`: the dtypes it decides (unsaid: bf16); a card's models of other dtypes join the one
  that serves it, each deciding its own (model/discovery.py dtype_models);
- `predict_dtypes`: of those, the ones predict mode may take a template for (unsaid: all); for
  the others predict keeps cuBLAS, plain's kernel (decide/decider.py).
A model holding scaled_mm must declare the "scaled_mm" feature block (feature_blocks.py): without
its columns an fp8 row reads as a bf16 GEMM of one-byte operands, blind to scaling and output.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from kselect.kernels.op_names import ADDMM, BMM, MM, SCALED_MM
from kselect.kernels.problem import OPS, SCALINGS
from kselect.selector.model.artifact import ModelError

DEFAULT_OPS = (MM, ADDMM, BMM)  # what a model without `ops` holds


class HeldOpsError(ModelError):
    """A sidecar's ops or scalings that cannot be served; the message says which."""


def _field(meta: Mapping, name: str):
    training = meta.get("training") if isinstance(meta.get("training"), Mapping) else {}
    return meta.get(name) if meta.get(name) is not None else training.get(name)


def held_ops(meta: Mapping) -> frozenset:
    """The ops a model's sidecar says it holds (DEFAULT_OPS when unsaid)."""
    ops = _field(meta, "ops")
    return frozenset(DEFAULT_OPS if ops is None else map(str, ops))


def held_dtypes(meta: Mapping) -> tuple[str, ...]:
    """The dtypes a model's sidecar says it decides (`dtypes`; bf16 alone when unsaid)."""
    return tuple(map(str, _field(meta, "dtypes") or ("bf16",)))


def predict_dtypes(meta: Mapping) -> tuple[str, ...]:
    """The dtypes predict mode may take a template for (`predict_dtypes`; every held one when unsaid)."""
    said = _field(meta, "predict_dtypes")
    return held_dtypes(meta) if said is None else tuple(map(str, said))


def held_scalings(meta: Mapping) -> frozenset:
    """The scaling kinds of a model's scaled_mm data (none when it holds no scaled_mm)."""
    if SCALED_MM not in held_ops(meta):
        return frozenset()
    scalings = _field(meta, "scalings")
    return frozenset(SCALINGS if scalings is None else map(str, scalings))


def check_held_ops(meta: Mapping, blocks: Sequence[str], source: str = "model") -> None:
    """Raise HeldOpsError, naming `source` and the field, for ops or scalings this kselect cannot
    serve, or a model holding scaled_mm without the scaled_mm block among its `blocks`."""
    for name, known in (("ops", OPS), ("scalings", SCALINGS)):
        value = _field(meta, name)
        if value is not None and (isinstance(value, str) or not set(map(str, value)) <= set(known)):
            raise HeldOpsError(f"{source}: {name} {value!r} names something not in {list(known)}")
    if SCALED_MM in held_ops(meta) and SCALED_MM not in blocks:  # the block is named for its op
        raise HeldOpsError(
            f"{source} claims scaled_mm but has no 'scaled_mm' feature block: it cannot tell an fp8 "
            "GEMM's scaling or output dtype apart; retrain it with `kselect train --feature-block scaled_mm`"
        )
