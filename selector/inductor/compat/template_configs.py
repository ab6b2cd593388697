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
from typing import Callable

from kselect.kernels.candidate import Candidate
from kselect.selector.inductor.compat.choice_candidates import is_flydsl_ktc, ktc_candidate, ktc_candidates
from kselect.selector.inductor.compat.enumeration import PlanMissed, pick_ktcs, templates_of

log = logging.getLogger(__name__)


def _base_choices_class():
    from torch._inductor.choices import InductorChoices

    return InductorChoices


def make_filtering_choices(keep: Callable[[Candidate], bool] | None = None, record: list | None = None):
    """An InductorChoices instance that records every candidate and keeps those `keep` accepts."""
    base = _base_choices_class()

    class FilteringChoices(base):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            kept = []
            for _uid, gen in template_choices.items():
                for ktc in gen:
                    cand = ktc_candidate(ktc)
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


def _joins_here(templates, op_name: str) -> bool:
    """Where extra mm/addmm templates join: the get_template_configs call that builds ATen's own
    mm/addmm (tuned_addmm makes several calls per GEMM, this one once per GEMM; read on 2.13,
    the 2.11 lowering is unchecked), and only under max-autotune (without it nothing is tuned)."""
    from torch._inductor import config

    if op_name not in ("mm", "addmm") or not (config.max_autotune or config.max_autotune_gemm):
        return False
    return any(str(getattr(t, "uid", "")) == f"aten::{op_name}" for t in templates)


def make_selecting_choices(
    select_ktcs: Callable, uuid: str, join=None, plan_ktcs: Callable | None = None, stock_space: Callable | None = None
):
    """An InductorChoices whose `_finalize_template_configs` hands the stock KTC list to
    `select_ktcs(ktcs, kernel_inputs, op_name, restock=) -> list` (before any code generation;
    `restock(space)` gives the KTCs stock Inductor finalizes for this GEMM in another GEMM search
    space, for a fallback to the user's own).

    `plan_ktcs(kernel_inputs, templates, op_name, generate) -> candidates | None` (optional)
    decides before Inductor generates the space (`generate(template)` gives Inductor's own
    candidates of a template kselect does not enumerate): Inductor then builds only the
    templates of the candidates returned and converts configs only until it has those
    (`pick_ktcs`), not the whole ~2,400-config EXHAUSTIVE space; None, or a candidate Inductor
    never yields (PlanMissed), takes the usual path.

    `join` (optional) adds templates to mm/addmm: `join.templates(kernel_inputs, op_name)` gives
    ExternKernelChoices whose configs come from their registered template heuristic, and
    `join.finalize(kept, stock)` vets the kept KTCs (compiles FlyDSL's) after selection.

    `stock_space(kind, kernel_inputs)` (optional) puts the op gate in front (op_kind.gated): an
    op it names a space for gets stock Inductor's choices built in that space, nothing else."""
    base = _base_choices_class()

    class KselectChoices(base):
        _plan = threading.local()  # the candidates this thread's current call wants, if planned

        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            extra = (
                list(join.templates(kernel_inputs, op_name))
                if join is not None and _joins_here(templates, op_name)
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

            def restock(space: str) -> list:  # what stock Inductor builds in `space`
                return self._in_space(space, kernel_inputs, templates, op_name, kwarg_overrides)

            kept = select_ktcs(list(stock), kernel_inputs, op_name, restock=restock)
            return join.finalize(kept, stock) if join is not None else kept

        def _in_space(self, space, kernel_inputs, templates, op_name, kwarg_overrides=None) -> list:
            """This GEMM's KTCs as stock Inductor finalizes them with `space` as its GEMM search
            space (its own generators and finalizing, run again under that setting)."""
            from torch._inductor import config

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

    # -- the op gate (selector/inductor/op_kind.py): ops kselect does not decide go to stock
    if stock_space is not None:
        from kselect.selector.inductor.op_kind import gated

        return gated(KselectChoices, stock_space)()
    return KselectChoices()
