"""Zero-code activation: `KSELECT_MODE=verify python train.py` with no kselect import.

pyproject registers `load` under torch's "torch.backends" entry-point group, which
`import torch` calls at its end (TORCH_DEVICE_BACKEND_AUTOLOAD, on by default). With
KSELECT_MODE unset or "off" it returns at once (one environment lookup per `import torch`);
otherwise it installs the plug-in, and any failure leaves stock Inductor with one warning
rather than breaking `import torch`.
"""

from __future__ import annotations

import os
import warnings

_loaded = False


def load() -> None:
    global _loaded
    if _loaded or os.environ.get("KSELECT_MODE", "").strip().lower() in ("", "off"):
        return
    _loaded = True
    try:
        from kselect.selector.inductor.lifecycle import enable_from_env

        enable_from_env()
    except Exception as exc:  # noqa: BLE001 -- never break `import torch`
        warnings.warn(
            f"kselect: KSELECT_MODE is set but the selector could not be enabled "
            f"({type(exc).__name__}: {exc}); stock Inductor",
            stacklevel=2,
        )
