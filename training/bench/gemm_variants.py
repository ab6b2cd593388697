"""`kselect bench gemm`'s variants: what each compiles with, and the check of a --variants list."""

from __future__ import annotations

VARIANTS = {
    # name: (max-autotune search space or None for plain, kselect mode or None)
    # (run in this order, cheapest first, so a time budget cuts stock EXHAUSTIVE, not kselect)
    "plain": (None, None),
    "kselect-predict": ("EXHAUSTIVE", "predict"),
    "kselect-verify": ("EXHAUSTIVE", "verify"),
    "default": ("DEFAULT", None),
    "exhaustive": ("EXHAUSTIVE", None),
}


class BenchError(ValueError):
    """Bad benchmark arguments (unknown variant, empty shape list, ...)."""


def parse_variants(spec: str) -> list[str]:
    names = [v.strip() for v in spec.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise BenchError(f"unknown variant(s) {bad or spec!r}: choose from {', '.join(VARIANTS)}")
    return names
