"""Inductor for a test module: every cache off and under a temporary folder, a feedback saver
recording what Inductor benchmarks, the given config patched in; kselect disabled afterwards.
Also the CPU's epilogue case the selector's and the collector's epilogue tests compile."""

from __future__ import annotations

import contextlib

import pytest


@contextlib.contextmanager
def inductor_sandbox(tmp, saver, **config):
    import torch

    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.inductor.compat import autotune

    patch = pytest.MonkeyPatch()
    patch.setenv("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp / "inductor-cache"))
    patch.setenv("TRITON_CACHE_DIR", str(tmp / "triton-cache"))
    remove = autotune.add_feedback_saver(saver)
    try:
        with torch._inductor.config.patch(max_autotune=True, force_disable_caches=True, **config):
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
