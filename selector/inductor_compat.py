"""Everything that touches Inductor's private API, in one place (torch 2.11 and 2.13).

- `ktc_candidate`: an Inductor KernelTemplateChoice -> our `Candidate` (same key space as
  the collector, so measurements and Inductor's choices line up).
- `FilteringChoices`: an `InductorChoices` subclass that sees every template's choices
  before code generation (`_finalize_template_configs`), records them, and keeps only
  those a predicate accepts.
- `choices_handler`: install such a handler for the duration of a compile.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterable

from kselect.kernels.candidate import Candidate

log = logging.getLogger(__name__)

_TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")


def template_of(uid: str) -> tuple[str, str]:
    """Inductor template uid -> (backend, template) in our naming."""
    u = uid.lower()
    if u.startswith("aten") or "extern" in u:
        op = u.split("::", 1)[1] if "::" in u else "mm"
        return "aten", {"mm": "mm", "addmm": "addmm", "bmm": "bmm"}.get(op, op)
    if "decompose_k" in u:
        return "triton", "decompose_k"
    if "persistent_tma" in u:
        return "triton", "persistent_tma"
    if u in ("triton::mm", "triton::bmm", "mm", "bmm"):
        return "triton", "mm"
    return "other", u


def ktc_params(ktc) -> dict:
    try:
        return dict(ktc.params.to_kwargs())
    except Exception:  # params of extern choices may not convert
        return {}


def ktc_candidate(ktc) -> Candidate:
    uid = getattr(ktc.template, "uid", None) or getattr(ktc.template, "name", "")
    backend, template = template_of(str(uid))
    kw = ktc_params(ktc)
    if backend == "aten":
        return Candidate.make("aten", template)
    if template == "decompose_k":
        return Candidate.make("triton", "decompose_k", k_split=int(kw["k_split"]))
    if backend == "triton" and all(k in kw for k in _TILE_KEYS):
        return Candidate.make("triton", template, **{k: int(kw[k]) for k in _TILE_KEYS})
    return Candidate.make(backend, template, **{k: v for k, v in kw.items()
                                                if isinstance(v, (int, str, bool))})


def _base_choices_class():
    from torch._inductor.choices import InductorChoices

    return InductorChoices


def make_filtering_choices(keep: Callable[[Candidate], bool] | None = None,
                           record: list | None = None):
    """An InductorChoices instance that records every candidate and keeps those `keep` accepts."""
    base = _base_choices_class()

    class FilteringChoices(base):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name,
                                       kwarg_overrides=None):
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


def add_feedback_saver(fn) -> Callable[[], None]:
    """Register an autotune feedback saver; returns a function that removes it."""
    from torch._inductor import select_algorithm as sa

    sa.add_feedback_saver(fn)

    def remove():
        savers = getattr(sa.get_algorithm_selector_cache(), "feedback_saver_fns", None)
        if isinstance(savers, list) and fn in savers:
            savers.remove(fn)
    return remove


def choice_candidate(choice) -> Candidate | None:
    """A benchmarked ChoiceCaller -> Candidate, via the KTC Inductor attaches to it."""
    ann = getattr(choice, "annotations", None) or {}
    ktc = ann.get("ktc")
    if ktc is not None:
        return ktc_candidate(ktc)
    name = getattr(choice, "name", "") or ""
    if "extern" in name or name.startswith("aten"):
        return Candidate.make("aten", "mm")
    return None


def candidates_of(records: Iterable) -> list[Candidate]:
    return [c for _, c in records]
