"""FlyDSL joins mm/addmm max-autotune on ROCm gfx942/gfx950, through the selector's handler
(a backend join: registry.py lists it).

`templates` is asked (by compat/template_configs.py, where ATen's mm/addmm is built) for extra templates:
FlyDSL's ExternKernelChoice, whose configs then reach the templates stage as KTCs and are
ranked with every other backend before anything is compiled. `finalize` compiles the FlyDSL
configs that were kept, in subprocesses, and drops those that do not build. Where the ROCm
gate refuses (CUDA, CPU) the reason is logged once at debug and nothing is added; any error
gives one warning and the other backends carry on, as they would without FlyDSL.
"""

from __future__ import annotations

import logging

from kselect.kernels.flydsl.space import OPS
from kselect.selector.compat import choice_candidates
from kselect.selector.warn import warn_once

log = logging.getLogger("kselect.selector")


class FlyDSLJoin:
    """One per Selector: remembers the gate's answer, so a refusal is logged once."""

    name = "flydsl"
    ops = OPS  # the ops (Inductor's op names at get_template_configs) it joins

    def __init__(self):
        self.off: str | None = None  # the gate's reason once it refused
        self.on = False

    def _open(self) -> bool:
        """Check the gate once; open -> our extern kernels exist."""
        if self.on or self.off is not None:
            return self.on
        from kselect.kernels.flydsl.gate import rocm_gate

        gate = rocm_gate()
        if not gate:
            self.off = gate.reason
            log.debug("FlyDSL off: %s", gate.reason)
            return False
        from kselect.kernels.flydsl import inductor  # noqa: F401 -- registers the externs

        self.on = True
        return True

    def prepare(self) -> None:
        """At enable() on ROCm torch: create the extern kernels now, because a graph loaded from
        Inductor's FX cache calls `extern_kernels.flydsl_gemm_*` without lowering anything.
        Elsewhere nothing happens here (no CUDA init); the first mm/addmm logs why it is off."""
        import torch

        if torch.version.hip is not None:
            try:
                self._open()
            except Exception as exc:  # noqa: BLE001
                warn_once(
                    f"flydsl:{type(exc).__name__}",
                    f"kselect: FlyDSL unavailable ({type(exc).__name__}: {exc}) -- the other backends carry on",
                )

    def templates(self, kernel_inputs, op_name: str) -> list:
        try:
            if not self._open():
                return []
            from kselect.kernels.flydsl import inductor as fly

            return fly.templates(kernel_inputs, op_name)
        except Exception as exc:  # noqa: BLE001 -- FlyDSL must never break a compile
            warn_once(
                f"flydsl:{type(exc).__name__}",
                f"kselect: FlyDSL choices unavailable ({type(exc).__name__}: {exc}) -- the other backends carry on",
            )
            return []

    def finalize(self, kept: list, stock: list) -> list:
        """`kept` without the FlyDSL configs that do not compile; if that leaves nothing, the
        stock list's other backends (a FlyDSL-only pick that cannot build is no pick)."""
        try:
            builds = choice_candidates.flydsl_builds(kept)
            if not builds:
                return kept
            from kselect.kernels.flydsl import inductor as fly

            ok = fly.usable([b for _, b in builds])
            drop = {i for (i, _), good in zip(builds, ok) if not good}
        except Exception as exc:  # noqa: BLE001
            warn_once(
                f"flydsl-compile:{type(exc).__name__}",
                f"kselect: cannot compile FlyDSL choices ({type(exc).__name__}: {exc}) -- the other backends carry on",
            )
            drop = {i for i, k in enumerate(kept) if choice_candidates.is_flydsl_ktc(k)}
        out = [k for i, k in enumerate(kept) if i not in drop]
        if out:
            return out
        log.info("kselect: no kept choice survived FlyDSL compilation; back to the other backends")
        return [k for k in stock if not choice_candidates.is_flydsl_ktc(k)]
