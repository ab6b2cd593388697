"""Inductor for a test module: every cache that decides what a compile does off, its compiled
code under a temporary folder, a feedback saver recording what Inductor benchmarks, the given
config patched in; kselect disabled afterwards. Also the CPU's epilogue case the selector's and
the collector's epilogue tests compile."""

from __future__ import annotations

import contextlib

import pytest


@contextlib.contextmanager
def inductor_sandbox(tmp, saver, **config):
    """The caches that decide what a compile does are off (compat/caches.py), not every cache:
    compiled code stays reusable under `tmp`, and each compile still benchmarks every choice it
    keeps."""
    import torch

    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.inductor.compat import autotune
    from kselect.selector.inductor.compat.caches import deciding_caches_off

    patch = pytest.MonkeyPatch()
    patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp / "inductor-cache"))
    patch.setenv("TRITON_CACHE_DIR", str(tmp / "triton-cache"))
    remove = autotune.add_feedback_saver(saver)
    try:
        with deciding_caches_off(), torch._inductor.config.patch(max_autotune=True, **config):
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
