"""InductorChoices subclasses: the handlers that see every template's configs before code
generation (`get_template_configs`, `_finalize_template_configs`).

- `make_filtering_choices`: records every candidate and keeps those a predicate accepts;
- `choices_handler`: installs such a handler for the duration of a compile;
- `make_selecting_choices`: the selector's handler; it also lets FlyDSL join mm/addmm
  (`get_template_configs`), compiles what survives (`_finalize_template_configs`) and keeps
  FlyDSL outputs in a fixed layout (`_need_to_fix_layout`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Callable, NamedTuple

from kselect.kernels.candidate import Candidate
from kselect.selector.compat.choice_candidates import (
    is_flydsl_ktc,
    ktc_candidates,
    op_ktc_candidate,
    stamp,
)
from kselect.selector.compat.enumeration import PlanMissed, pick_ktcs, templates_of

log = logging.getLogger(__name__)


def _base_choices_class():
    from torch._inductor.choices import InductorChoices

    return InductorChoices


def make_filtering_choices(keep: Callable[[Candidate], bool] | None = None, record: list | None = None):
    """An InductorChoices instance that records every candidate and keeps those `keep` accepts
    (each read for its op: an fp8 `_scaled_mm`'s templates as the scaled ones)."""
    base = _base_choices_class()

    class FilteringChoices(base):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            kept = []
            for _uid, gen in template_choices.items():
                for ktc in gen:
                    cand = op_ktc_candidate(ktc, op_name)
                    if record is not None:
                        record.append((op_name, cand))
                    if keep is None or keep(cand):
                        kept.append(ktc)
            return kept

    return FilteringChoices()


@contextlib.contextmanager
def choices_handler(handler):
    """Install `handler` as Inductor's choices handler (thread-local) for a compile."""
    from torch._inductor.virtualized import V

    old = V.choices
    V.set_choices_handler(handler)
    try:
        yield handler
    finally:
        V.set_choices_handler(old)


def _joins_here(templates, op_name: str, ops) -> bool:
    """Where extra templates join one of the joined `ops` (FlyDSL's: mm, addmm): the
    get_template_configs call that builds ATen's own op (tuned_addmm makes several calls per
    GEMM, this one once per GEMM; read on 2.13, the 2.11 lowering is unchecked), and only under
    max-autotune (without it nothing is tuned)."""
    from torch._inductor import config

    if op_name not in ops or not (config.max_autotune or config.max_autotune_gemm):
        return False
    return any(str(getattr(t, "uid", "")) == f"aten::{op_name}" for t in templates)


class Restock(NamedTuple):
    """A fallback's narrowing: the GEMM's choices as stock Inductor builds them in the user's
    own GEMM search space `space` (`build()`), where kselect widened it for the decision."""

    space: str
    build: Callable[[], list]


def make_selecting_choices(
    select_ktcs: Callable,
    uuid: str,
    join=None,
    plan_ktcs: Callable | None = None,
    admit: Callable | None = None,
    widen: str | None = None,
):
    """An InductorChoices whose `_finalize_template_configs` hands the stock KTC list to
    `select_ktcs(ktcs, kernel_inputs, op_name, restock=) -> list` (before any code generation;
    `restock`, a Restock or None, gives the KTCs stock Inductor finalizes for this GEMM in the
    user's own GEMM search space, for a fallback).

    `widen` (optional, "EXHAUSTIVE"): the GEMM search space kselect ranks, in force only inside
    the templates stage of a GEMM kselect decides (`config.patch` around that call alone):
    Inductor's global setting stays the user's, so nothing kselect does not decide -- another
    op's lowering, a cache key -- reads a widened value.

    `plan_ktcs(kernel_inputs, templates, op_name, generate) -> candidates | None` (optional)
    decides before Inductor generates the space (`generate(template)` gives Inductor's own
    candidates of a template kselect does not enumerate): Inductor then builds only the
    templates of the candidates returned and converts configs only until it has those
    (`pick_ktcs`), not the whole ~2,400-config EXHAUSTIVE space; None, or a candidate Inductor
    never yields (PlanMissed), takes the usual path.

    `join` (optional; selector/backends/registry.py) adds templates to the ops it names
    (`join.ops`): `join.templates(kernel_inputs, op_name)` gives ExternKernelChoices whose
    configs come from their registered template heuristic, and `join.finalize(kept, stock)`
    vets the kept KTCs (compiles FlyDSL's) after selection.

    `admit(op_name, kernel_inputs) -> (kind, decided)` (optional; the op gate,
    selector/ops/gate.py) goes in front (`_gated`): an op it does not decide gets stock
    Inductor's choices under the user's settings, nothing else."""
    from torch._inductor import config

    base = _base_choices_class()

    class KselectChoices(base):
        _plan = threading.local()  # the candidates this thread's current call wants, if planned
        _spaces = threading.local()  # the user's own space while this thread's decided call runs

        def user_space_in_force(self) -> str | None:
            """The user's GEMM search space while the templates stage of a GEMM kselect decides
            runs on this thread (kselect's space in force, which may be the same), else None."""
            return getattr(self._spaces, "user", None)

        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            outer = self.user_space_in_force()
            user = outer or str(config.max_autotune_gemm_search_space).upper()
            space = (widen or user).upper()
            self._spaces.user = user
            try:
                with config.patch(max_autotune_gemm_search_space=space):
                    return self._decided_configs(kernel_inputs, templates, op_name, kwarg_overrides)
            finally:
                self._spaces.user = outer

        def _decided_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            extra = (
                list(join.templates(kernel_inputs, op_name))
                if join is not None and _joins_here(templates, op_name, join.ops)
                else []
            )
            if extra:
                templates = list(templates) + extra
            elif plan_ktcs is not None:
                overrides = kwarg_overrides or {}

                def generate(template):  # Inductor's own candidates of one template, mapped
                    uid = getattr(template, "uid", None)
                    return ktc_candidates(self.get_ktc(kernel_inputs, template, op_name, overrides.get(uid, {})))

                wanted = plan_ktcs(kernel_inputs, templates, op_name, generate)
                if wanted is not None:
                    self._plan.wanted = wanted
                    try:
                        return super().get_template_configs(
                            kernel_inputs, templates_of(templates, wanted), op_name, kwarg_overrides
                        )
                    except PlanMissed as exc:
                        log.info(
                            "kselect: early decision not generated by Inductor (%s) -- deciding "
                            "over the generated space",
                            exc,
                        )
                    finally:
                        self._plan.__dict__.pop("wanted", None)
            return super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)

        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            # taken, not read: building the kept choices can lower a nested GEMM (decompose-k's
            # subgraph) through this handler, which must not see the outer GEMM's plan
            wanted = self._plan.__dict__.pop("wanted", None)
            if wanted is not None:
                return pick_ktcs(template_choices, wanted)
            stock = list(
                super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
            )
            user = self.user_space_in_force()
            restock = None
            if user is not None and user != str(config.max_autotune_gemm_search_space).upper():
                restock = Restock(
                    user, lambda: self._in_space(user, kernel_inputs, templates, op_name, kwarg_overrides)
                )
            kept = select_ktcs(list(stock), kernel_inputs, op_name, restock=restock)
            return join.finalize(kept, stock) if join is not None else kept

        def _in_space(self, space, kernel_inputs, templates, op_name, kwarg_overrides=None) -> list:
            """This GEMM's KTCs as stock Inductor finalizes them with `space` as its GEMM search
            space (its own generators and finalizing, run again under that setting)."""
            overrides = kwarg_overrides or {}
            with config.patch(max_autotune_gemm_search_space=space.upper()):
                regenerated = {
                    t.uid: iter(list(self.get_ktc(kernel_inputs, t, op_name, overrides.get(t.uid, {}))))
                    for t in templates
                }
                return list(
                    base._finalize_template_configs(
                        self, regenerated, kernel_inputs, templates, op_name, kwarg_overrides
                    )
                )

        def _need_to_fix_layout(self, adjusted_choices, op_name):
            # FlyDSL writes a contiguous output; a flexible layout could be re-strided later
            if any(is_flydsl_ktc(k) for k in adjusted_choices):
                return True
            return super()._need_to_fix_layout(adjusted_choices, op_name)

        def uuid(self) -> str:  # folded into Inductor's FX-graph cache key on 2.13
            return uuid

    return _gated(KselectChoices, admit)() if admit is not None else KselectChoices()


def _gated(handler_cls, admit: Callable):
    """`handler_cls` (KselectChoices) behind the op gate: an op kselect does not decide
    (`admit(op_name, kernel_inputs)` -> (kind, False)) gets stock InductorChoices' own choices,
    built under the user's settings -- no early decision, no FlyDSL join, no selection, no
    widened space (where a decided GEMM's own lowering reaches it, the user's space is put back
    for it). Every choice is stamped with its kind."""
    from torch._inductor import config

    base = _base_choices_class()

    class GatedChoices(handler_cls):
        _stock = threading.local()  # this thread's get_template_configs builds stock choices

        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            kind, decided = admit(op_name, kernel_inputs)
            if decided:
                return stamp(super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides), kind)
            user = self.user_space_in_force() or config.max_autotune_gemm_search_space  # put back, if widened
            self._stock.on = True
            try:
                with config.patch(max_autotune_gemm_search_space=user):
                    built = base.get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides)
            finally:
                self._stock.__dict__.pop("on", None)
            return stamp(built, kind)

        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            # taken, not read: converting the kept choices may lower a nested GEMM through this handler
            if self._stock.__dict__.pop("on", False):
                return base._finalize_template_configs(
                    self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides
                )
            return super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )

    GatedChoices.__name__ = GatedChoices.__qualname__ = f"Gated{handler_cls.__name__}"
    return GatedChoices
