"""The op gate: the selector's door. An op with a module in this room (registry.py) that the
serving model holds is decided; every other op that reaches a hook -- `_int_mm`, `mm_plus_mm`,
`_scaled_grouped_mm`, convolutions, flex attention, a `_scaled_mm` or `_grouped_mm` no model
here holds, a dtype the model lacks, ... -- gets exactly Inductor's stock choices, built in the
user's own GEMM search space (never in the space kselect widened to for the ops it ranks), and
one INFO line per kind. The op is named by naming.py, never guessed from its input shapes.
"""

from __future__ import annotations

import logging
from typing import Callable

from kselect.selector.model.artifact import ModelError
from kselect.selector.ops import registry
from kselect.selector.ops.kind import TEMPLATES, OpKind
from kselect.selector.ops.naming import choices_kind, lowering_kind
from kselect.selector.unavailable import RankerUnavailable
from kselect.selector.warn import inform_once, warn_once

log = logging.getLogger("kselect.selector")


class OpGate:
    """Which ops the selector decides; the rest go to stock Inductor, each kind noted once.
    `holdings_for(device)` gives what the device's ranker decides (`ops`, `scalings`, `dtypes`,
    `grouped`; None: no ranker) without loading or warming one -- the question costs an
    undecided op's compile no model load (inductor/device_rankers.py); ModelError: a sidecar
    that cannot be read."""

    def __init__(self, holdings_for: Callable):
        self._holdings_for = holdings_for

    def _holdings(self, nodes):
        """What the ranker of the op's device holds; an unreadable model warns here, once."""
        try:
            return self._holdings_for(nodes[0].get_device())
        except (ModelError, RankerUnavailable) as exc:  # an unreadable model: its one warning, as for any GEMM
            warn_once("model", f"kselect: cannot use cost model: {exc} -- stock autotuning")
            return None

    def _quiet_holdings(self, nodes):
        """The same, for an op any model decides: the usual path reports an unreadable model."""
        try:
            return self._holdings_for(nodes[0].get_device())
        except (ModelError, RankerUnavailable):
            return None

    def _leaves(self, name: str, nodes) -> bool:
        kind = registry.get(name)
        if kind is None:
            return self._noted(name)
        ask = self._holdings if kind.held_only else self._quiet_holdings
        return self._noted(kind.unheld(lambda: ask(nodes), nodes))

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
        name = lowering_kind(op_name)
        kind = registry.get(name)
        if kind is None:
            return name, not self._noted(name)
        if TEMPLATES not in kind.stages:  # never asked here by its lowering: stock, as it would be
            return name, False
        try:
            return name, not self._leaves(name, kernel_inputs.nodes())
        except Exception as exc:  # noqa: BLE001 -- the gate must never break a compile
            _unreadable("templates", exc)
            return name, False

    def kind_of_choices(self, choices) -> OpKind | None:
        """Choices stage: the op kind kselect decides these choices as, or None where they go
        back to Inductor untouched (as at the templates stage, an op the gate cannot read)."""
        if not choices:
            return None
        try:
            name = choices_kind(choices)
            if self._leaves(name, list(getattr(choices[0], "input_nodes", None) or [])):
                return None
        except Exception as exc:  # noqa: BLE001 -- the gate must never break a compile
            _unreadable("choices", exc)
            return None
        return registry.get(name)

    def leaves_choices(self, choices) -> bool:
        """Choices stage: True where these choices go back to Inductor untouched."""
        return self.kind_of_choices(choices) is None


def _unreadable(stage: str, exc: Exception) -> None:
    """The gate could not read the op: it goes to stock, with one warning per cause."""
    log.debug("kselect: op gate failed at the %s stage", stage, exc_info=True)
    warn_once(
        f"op-gate:{type(exc).__name__}",
        f"kselect: cannot read the op being lowered ({type(exc).__name__}: {exc}) -- stock autotuning",
    )
