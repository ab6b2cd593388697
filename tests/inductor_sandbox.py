"""Inductor for a test module: every cache that decides what a compile does off, its compiled
code under a temporary folder, a feedback saver recording what Inductor benchmarks, the given
config patched in; kselect disabled afterwards. Also the CPU's epilogue case the selector's and
the collector's epilogue tests compile."""

from __future__ import annotations

import contextlib

import pytest

# The caches that would let a compile skip work a test watches: Inductor's FX-graph and autotune
# caches (local and remote), AOTAutograd's, and Dynamo's profile-guided dynamic shapes. Each is
# off; the names a torch release lacks are left out.
_CACHES_OFF = {
    "torch._inductor.config": (
        "fx_graph_cache",
        "fx_graph_remote_cache",
        "autotune_local_cache",
        "autotune_remote_cache",
        "bundled_autotune_remote_cache",
    ),
    "torch._functorch.config": ("enable_autograd_cache", "enable_remote_autograd_cache"),
    "torch._dynamo.config": ("automatic_dynamic_local_pgo", "automatic_dynamic_remote_pgo"),
}


@contextlib.contextmanager
def inductor_sandbox(tmp, saver, **config):
    """Not `force_disable_caches`: that gives every compile a fresh cache folder, so each one
    also rebuilt the precompiled header and every C++ kernel (~20 s a compile on the CPU). Here
    the compiled-code caches of the folder under `tmp` stay (a kernel's binary, keyed by its
    source) and every cache that decides whether Inductor lowers, autotunes or benchmarks is off:
    each compile still benchmarks every choice it keeps."""
    import importlib

    import torch

    from kselect.selector.compat import autotune
    from kselect.selector.inductor import lifecycle as ksi

    patch = pytest.MonkeyPatch()
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp / "inductor-cache"))
    patch.setenv("TRITON_CACHE_DIR", str(tmp / "triton-cache"))
    remove = autotune.add_feedback_saver(saver)
    try:
        with contextlib.ExitStack() as configs:
            for module, names in _CACHES_OFF.items():  # each config's own patch restores it after
                cfg = importlib.import_module(module)
                configs.enter_context(cfg.patch({name: False for name in names if hasattr(cfg, name)}))
            configs.enter_context(torch._inductor.config.patch(max_autotune=True, **config))
            yield saver
    finally:
        remove()
        ksi.disable()
        patch.undo()


def linear_gelu():
    """A Linear(96, 80) + GELU in eval mode, seeded: frozen under CPU max-autotune its GEMM has
    an MKL choice and a C++ template choice, and a GELU epilogue only the template can fuse."""
    import torch

    class LinearGelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(96, 80)

        def forward(self, x):
            return torch.nn.functional.gelu(self.lin(x))

    torch.manual_seed(0)
    return LinearGelu().eval()
