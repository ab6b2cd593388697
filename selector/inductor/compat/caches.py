"""Inductor's caches that decide what a compile does, turned off by name.

`force_disable_caches` also gives every compile a fresh cache folder (compile_fx's
`with_fresh_cache_if_config`), so each compile rebuilds what it compiled before: on the CPU the
precompiled header and every C++ kernel, ~20 s a compile. A measurement that must see Inductor
lower, autotune and benchmark afresh needs only the caches below off; compiled code, keyed by its
source, stays reusable. Names a torch release lacks are left out (2.11 to 2.13).
"""

from __future__ import annotations

import contextlib
import importlib

DECIDING_CACHES = {
    # the FX graph (a whole compile's result) and autotuning's results, local and remote
    "torch._inductor.config": (
        "fx_graph_cache",
        "fx_graph_remote_cache",
        "autotune_local_cache",
        "autotune_remote_cache",
        "bundled_autotune_remote_cache",
    ),
    "torch._functorch.config": ("enable_autograd_cache", "enable_remote_autograd_cache"),
    # profile-guided dynamic shapes: a size seen before would be compiled dynamic
    "torch._dynamo.config": ("automatic_dynamic_local_pgo", "automatic_dynamic_remote_pgo"),
}


@contextlib.contextmanager
def deciding_caches_off():
    """Within: every cache of DECIDING_CACHES off, each config restored after by its own patch."""
    with contextlib.ExitStack() as stack:
        for module, names in DECIDING_CACHES.items():
            cfg = importlib.import_module(module)
            stack.enter_context(cfg.patch({name: False for name in names if hasattr(cfg, name)}))
        yield
