"""Dynamo's compile callbacks: run something as each compile starts."""

from __future__ import annotations

from typing import Callable


def on_compile_start(callback) -> Callable[[], None]:
    """Call `callback` as each Dynamo compile starts; returns the undo (a no-op where this torch
    has no compile callbacks)."""
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        return lambda: None
    callback_handler.register_start_callback(callback)

    def undo():
        if callback in callback_handler.start_callbacks:
            callback_handler.remove_start_callback(callback)

    return undo
