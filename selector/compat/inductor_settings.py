"""Inductor's settings kselect sets or reads: the choices handler (`V.choices` and
`config.inductor_choices_class`, the one global setting it changes), the GEMM search space in
force (read only: kselect widens it inside a decided GEMM's templates stage alone,
compat/template_configs.py), the multi-kernel size hints."""

from __future__ import annotations

from typing import Callable

_HANDLERS: dict = {}  # name -> the choices handler installed under it, in this process


class ChoicesByName:
    """config.inductor_choices_class value: calls return the handler installed under `name`.

    Inductor pickles and deep-copies its config (FX-graph cache key, config patches, compile
    workers): a lambda there fails to pickle ("Failed to pickle cache key") and turns that cache
    off. This pickles as the name (kselect's configuration, handler.uuid()); in a process where
    nothing is installed under it, it gives stock InductorChoices."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self):
        handler = _HANDLERS.get(self.name)
        if handler is None:
            from torch._inductor.choices import InductorChoices

            return InductorChoices()
        return handler

    def __eq__(self, other):
        return isinstance(other, ChoicesByName) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"ChoicesByName({self.name!r})"


def install_choices(handler) -> Callable[[], None]:
    """Make `handler` Inductor's choices handler (thread-local, and through
    config.inductor_choices_class for other threads); returns a function that undoes it."""
    from torch._inductor import config
    from torch._inductor.virtualized import V

    old_handler = V.choices
    has_cls = hasattr(config, "inductor_choices_class")
    old_cls = getattr(config, "inductor_choices_class", None)
    V.set_choices_handler(handler)
    uuid = getattr(handler, "uuid", None)
    name = str(uuid()) if callable(uuid) else f"{type(handler).__name__}:{id(handler)}"
    if has_cls:
        _HANDLERS[name] = handler
        config.inductor_choices_class = ChoicesByName(name)

    def restore():
        V.set_choices_handler(old_handler)
        if has_cls:
            if _HANDLERS.get(name) is handler:
                del _HANDLERS[name]
            config.inductor_choices_class = old_cls

    return restore


def current_choices():
    from torch._inductor.virtualized import V

    return V.choices


def gemm_search_space() -> str:
    """The GEMM config list Inductor builds now ("DEFAULT" or "EXHAUSTIVE")."""
    from torch._inductor import config

    return str(config.max_autotune_gemm_search_space)


def multi_kernel_hints() -> list[int] | None:
    """Inductor's `multi_kernel_hints` (the sizes its multi-kernel dispatch tunes a dynamic
    dimension at), or None where this torch has no such setting."""
    from torch._inductor import config

    for owner in (config, getattr(config, "triton", None)):
        hints = getattr(owner, "multi_kernel_hints", None) if owner is not None else None
        if hints is not None:
            return [int(h) for h in hints]
    return None
