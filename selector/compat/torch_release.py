"""Which torch releases the private-Inductor boundary is written for, and what a release cannot do."""

from __future__ import annotations

# The torch releases this layer is written and tested for (pyproject.toml pins the same range):
# 2.11 on the GPU machine, 2.13 in CI. Another release may move a private name this package reads.
SUPPORTED_TORCH = ((2, 11), (2, 13))


def torch_support_problem(version: str | None = None) -> str | None:
    """Why this torch is outside the supported range, or None when it is inside."""
    import torch

    text = version if version is not None else torch.__version__
    try:
        release = tuple(int(part) for part in text.split("+")[0].split(".")[:2])
    except ValueError:
        return f"torch {text}: cannot read its version"
    low, high = SUPPORTED_TORCH
    if not low <= release <= high:
        return (
            f"torch {text} is outside kselect's supported range "
            f"{low[0]}.{low[1]}-{high[0]}.{high[1]} (its Inductor hooks are private API)"
        )
    return None


def broken_templates(problem) -> frozenset:
    """Templates this torch builds but cannot run for `problem`: on torch 2.11, every bf16
    decompose-k choice fails inside Inductor (reports/2026-12-02-faithfulness-h200). Never kept."""
    import torch

    if problem.dtype == "bf16" and torch.__version__.startswith("2.11"):
        return frozenset({"decompose_k"})
    return frozenset()
