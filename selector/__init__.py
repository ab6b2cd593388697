"""kselect.selector: features, cost model and the Inductor plug-in that picks GEMM kernels.

`enable(...)`, `disable()`, `selecting(...)` install the plug-in (see docs/selector.md);
with KSELECT_MODE=verify|predict in the environment, `import torch` enables it (autoload.py).
Torch is imported only when the plug-in is used.
"""

import os as _os

__all__ = ["enable", "disable", "selecting", "enable_from_env", "print_options"]


def __getattr__(name):
    if name in ("enable", "disable", "selecting", "enable_from_env"):
        from kselect.selector.inductor import lifecycle as inductor

        return getattr(inductor, name)
    if name == "print_options":
        from kselect.selector.config import print_options

        return print_options
    raise AttributeError(name)


if _os.environ.get("KSELECT_MODE", "off").strip().lower() not in ("", "off"):
    from .autoload import load as _load  # also torch's autoload hook; runs once, never raises

    _load()
