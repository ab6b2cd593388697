"""The GPU test modules' one skip rule: this CUDA card has a cost model kselect would serve.

Which model that is, is asked of the selector's own discovery (`load_shipped` with the card's
fingerprint, what `Selector` does when no model is named), never of a card's name. No CUDA
device, or no model served on this card, skips with the reason; any other model problem is
raised, so the tests fail instead of hiding it.
"""

from __future__ import annotations

import pytest


def served_model():
    """(fingerprint, CostModel) kselect serves on the current CUDA card, or a skip saying why not."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kselect.selector.fingerprint import device_fingerprint
    from kselect.selector.model.checks import DeviceMismatchError
    from kselect.selector.model.discovery import load_shipped

    fingerprint = device_fingerprint(torch.device("cuda", torch.cuda.current_device()))
    try:
        return fingerprint, load_shipped(fingerprint=fingerprint)
    except DeviceMismatchError as exc:
        pytest.skip(f"kselect serves no cost model on this card: {exc}")


def sm90_marks() -> list:
    """The marks of a GPU module that needs fp8 and grouped GEMMs: `gpu`, and a skip without a
    CUDA card of compute capability 9.0 or more (H100 / H200)."""
    torch = pytest.importorskip("torch")
    return [
        pytest.mark.gpu,
        pytest.mark.skipif(
            not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
            reason="needs a CUDA GPU with fp8 and grouped GEMMs (sm90: H100 / H200)",
        ),
    ]
