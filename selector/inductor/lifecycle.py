"""Installing kselect: `enable()` / `disable()` / `selecting()` / `current()` /
`enable_from_env()` make a Selector (selector/inductor/hook.py) the active one of this thread --
Inductor's choices handler, its global preprocessing and feedback callbacks, the warm start as
each compile begins, and the GEMM search space it ranks (inside the GEMMs it decides alone)."""

from __future__ import annotations

import contextlib
import logging
import threading

from kselect.selector.compat import (
    autotune,
    dynamo_callbacks,
    inductor_settings,
    multi_template,
    template_configs,
    torch_release,
)
from kselect.selector.config import SelectorSettings, keyword_help
from kselect.selector.config import read as read_options
from kselect.selector.inductor.hook import Selector
from kselect.selector.logs import register_with_torch_logs
from kselect.selector.warn import reset_warnings, warn_once

log = logging.getLogger("kselect.selector")

_state = threading.local()
_preprocess_lock = threading.Lock()
_preprocess_registered = False


def _active() -> Selector | None:
    handler = inductor_settings.current_choices()
    return getattr(handler, "kselect_selector", None)


def _preprocess(choices):
    """Global preprocessing fn: acts only while a kselect handler is Inductor's choices handler."""
    sel = _active()
    return choices if sel is None else sel.select_choices(list(choices))


def _feedback(timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
    """Global feedback saver: hands Inductor's measurements of a kept set (verify, or an
    epilogue's few in either mode) to the active selector."""
    sel = _active()
    if sel is not None:
        try:
            device = input_nodes[0].get_device() if input_nodes else None
            sel.record_verified(list(choices), dict(timings), getattr(device, "type", "cuda"))
        except Exception as exc:  # noqa: BLE001 -- never break a compile over the cache
            warn_once(
                f"verify-record:{type(exc).__name__}",
                f"kselect: could not cache a verified winner ({type(exc).__name__}: {exc})",
            )


def _fusion_pick(choices, chosen, device_type: str) -> None:
    """The scheduler settled a multi-template buffer: the active selector caches its pick when
    the buffer is an epilogue's few it handed over (nothing otherwise)."""
    sel = _active()
    if sel is None:
        return
    try:
        sel.record_fusion_pick(choices, chosen, device_type)
    except Exception as exc:  # noqa: BLE001 -- never break a compile over the cache
        warn_once(
            f"fusion-record:{type(exc).__name__}",
            f"kselect: could not cache Inductor's epilogue-fusion pick ({type(exc).__name__}: {exc})",
        )


def _ensure_preprocess() -> None:
    global _preprocess_registered
    with _preprocess_lock:
        if not _preprocess_registered:
            autotune.add_preprocessing_fn(_preprocess)
            autotune.add_feedback_saver(_feedback)
            multi_template.watch_final_choices(_fusion_pick)
            _preprocess_registered = True


def enable(mode: str = "verify", **settings) -> Selector | None:
    """Install kselect for subsequent max-autotune compiles in this thread (mode="off": remove it).

    The keywords are config.SelectorSettings' fields, each checked before the active selector
    is touched (SettingError naming a bad one); so is a model file `model` names (ModelError
    naming the file). A GEMM kselect cannot rank goes back to the user's own search space.
    The keywords:
    """
    config = SelectorSettings.from_keywords(mode=mode, **settings)
    sel = None if config.mode == "off" else Selector(**config.keywords())
    if sel is not None:
        sel.load_named_model()
    disable()
    reset_warnings()
    if sel is None:
        return None
    unsupported = torch_release.torch_support_problem()
    if unsupported:
        # the hooks below are private Inductor API: outside the tested range, stock autotuning
        warn_once("torch-version", f"kselect: {unsupported} -- stock autotuning")
        return None
    register_with_torch_logs()
    _install(sel, config.search_space)
    log.info(
        "kselect enabled: mode=%s k=%d keep_aten=%s cache=%s",
        sel.mode,
        sel.k,
        sel.keep_aten,
        sel.cache.root if sel.cache else None,
    )
    return sel


enable.__doc__ += keyword_help()
enable.__signature__ = SelectorSettings.signature()


def _install(sel: Selector, search_space: str | None) -> None:
    """Make `sel` the active selector of this thread (nothing may be active). `search_space`:
    the GEMM space it ranks (None: the user's), in force only inside the templates stage of a
    GEMM it decides -- Inductor's own setting is never changed."""
    sel.joins.prepare()
    handler = template_configs.make_selecting_choices(
        sel.select_ktcs,
        sel.uuid(),
        join=sel.joins,
        plan_ktcs=sel.plan_ktcs,
        admit=sel.op_gate.admit,
        widen=search_space,
    )
    handler.kselect_selector = sel
    _ensure_preprocess()
    restore_handler = inductor_settings.install_choices(handler)
    restore_warmup = _warm_as_compiles_start(sel)

    def restore():
        restore_warmup()
        restore_handler()

    _state.restore = restore
    _state.selector = sel
    _state.search_space = search_space


def _warm_as_compiles_start(sel: Selector):
    """Begin the warm start as each Dynamo compile starts (not at enable(): it belongs to the
    compile it speeds up, and is timed with it); returns the undo."""
    if sel.warm_start is None:
        return lambda: None
    return dynamo_callbacks.on_compile_start(sel.warm_start.start)


def disable() -> None:
    """Back to stock Inductor (the handler that was installed before enable())."""
    restore = getattr(_state, "restore", None)
    if restore is not None:
        restore()
    sel = getattr(_state, "selector", None)
    if sel is not None and sel.cache is not None:
        sel.cache.flush()  # its queued decisions on disk before anyone else reads the cache
    _state.restore = None
    _state.selector = None
    _state.search_space = None


def current() -> Selector | None:
    return getattr(_state, "selector", None)


def ranked_space() -> str | None:
    """The GEMM search space the active selector ranks for a GEMM it decides (in force inside
    that GEMM's templates stage alone); None: no selector, or one that ranks the user's own."""
    return getattr(_state, "search_space", None) if current() is not None else None


@contextlib.contextmanager
def selecting(mode: str = "verify", **kwargs):
    """`with selecting("predict", ranker=...):` -- kselect for the compiles inside, then the
    outer configuration again (the same Selector, its stats and loaded model) on any exit: the
    block returning or raising, or enable() refusing its arguments (which changes nothing)."""
    prev, prev_space = current(), getattr(_state, "search_space", None)
    try:
        yield enable(mode, **kwargs)
    finally:
        if current() is not prev or prev is None:
            disable()
            if prev is not None:  # re-install the outer configuration
                _install(prev, prev_space)


def enable_from_env(environ=None) -> Selector | None:
    """enable() from the KSELECT_* environment options (config.OPTIONS)."""
    o = read_options(environ)
    if o["mode"] == "off":
        return None
    return enable(**o)  # every environment option is an enable() keyword
