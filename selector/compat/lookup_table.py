"""Inductor's template lookup table (`config.lookup_table.table`, read by
`torch._inductor.lookup_table.LookupTableChoices`): what training/data/lookup_table.py needs to
write kselect's decisions in Inductor's own format."""

from __future__ import annotations

from kselect.selector.compat.choice_candidates import template_kind


# Inductor's template lookup table (`config.lookup_table.table`, read by
# `torch._inductor.lookup_table.LookupTableChoices`): what training/data/lookup_table.py needs
# to write kselect's decisions in Inductor's own format.
def lookup_table_missing() -> str | None:
    """None when this torch has Inductor's template lookup table, else the reason it has not."""
    import torch

    try:
        from torch._inductor import config
        from torch._inductor.lookup_table import LookupTableChoices  # noqa: F401
    except ImportError as exc:
        return f"torch {torch.__version__} has no Inductor template lookup table ({exc})"
    if not hasattr(getattr(config, "lookup_table", None), "table"):
        return f"torch {torch.__version__} has no torch._inductor.config.lookup_table.table"
    return None


def lookup_template_uids() -> dict:
    """(backend, template, family) -> the uid Inductor's lookup table names that template by, for
    the templates Inductor's mm-family ("mm": mm/addmm) and bmm-family ("bmm": bmm/baddbmm)
    lowerings pass through the template stage (the only stage the table governs)."""
    from torch._inductor.kernel import bmm as inductor_bmm
    from torch._inductor.kernel import mm as inductor_mm

    families = {
        "mm": [
            getattr(inductor_mm, name, None)
            for name in (
                "aten_mm",
                "aten_addmm",
                "aten_bias_addmm",
                "mm_template",
                "persistent_tma_mm_template",
                "decompose_k_subgraph_template",
            )
        ],
        "bmm": [getattr(inductor_bmm, name, None) for name in ("aten_bmm", "aten_baddbmm", "bmm_template")],
    }
    out = {}
    for family, templates in families.items():
        for template in templates:
            uid = getattr(template, "uid", None)
            if uid:
                out[(*template_kind(template), family)] = uid
    return out
