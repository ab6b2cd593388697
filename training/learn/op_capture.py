"""Headroom capture per op kind and per dtype. Op kinds: mm, addmm, bmm, fp8 scaled_mm by its
scaling (`scaled_mm:tensorwise`, `scaled_mm:rowwise`: a model may hold one and not the other),
and GEMM + epilogue groups (training/data/epilogue_rows.py's rows, whose problem_key carries KEY_MARK) as
their own kind, so a model that wins on one op and loses on another is seen. An op with fewer
than MIN_SHAPES shapes is reported by its count alone: one shape's capture is not a measure of
the op. Dtypes: where one model holds several (bf16, fp16, tf32, fp32), each dtype's headroom
and captures apart (headroom.split_stats makes both splits; this module reads them out)."""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from kselect.kernels.problem import key_op, key_scaling
from kselect.training.data.epilogue_rows import KEY_MARK
from kselect.training.learn.pooled import KEY_SEPARATOR

EPILOGUE_GROUP = "gemm+epilogue"
MIN_SHAPES = 2
_OPS_ORDER = ("mm", "addmm", "bmm", "scaled_mm:tensorwise", "scaled_mm:rowwise", EPILOGUE_GROUP)


def shape_ops(rows, starts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per shape its op kind: the rows' `op` column (the problem key's prefix where it is empty),
    a scaled_mm with its scaling (`scaled_mm:rowwise`, from its key), EPILOGUE_GROUP for a GEMM +
    epilogue group whatever its GEMM's op."""
    col = rows["op"].iloc[starts].fillna("").astype(str).to_numpy() if "op" in rows else np.full(len(keys), "")

    def kind(op: str, key: str) -> str:
        if KEY_MARK in key:
            return EPILOGUE_GROUP
        bare = key.split(KEY_SEPARATOR, 1)[-1]
        op = op or key_op(bare)
        scaling = key_scaling(bare)
        return f"{op}:{scaling}" if scaling else op

    return np.array([kind(op, str(k)) for op, k in zip(col, keys, strict=True)], dtype=object).astype(str)


def op_split(on: Callable[[np.ndarray], dict], ops: np.ndarray, within: np.ndarray) -> dict:
    """{op: on(its shapes among `within`)} for each op kind present, in a fixed order; below
    MIN_SHAPES shapes every figure but the count is None."""
    out = {}
    for op in sorted(set(ops[within]), key=lambda o: (_OPS_ORDER.index(o) if o in _OPS_ORDER else 99, o)):
        stats = on(within & (ops == op))
        if stats["shapes"] < MIN_SHAPES:
            stats = {k: (v if k == "shapes" else None) for k, v in stats.items()}
        out[op] = stats
    return out


def flat_groups(detail: Mapping, ks, split: str = "ops") -> dict:
    """headroom_section's flattened reading of its detail per group of `split` ("ops" or
    "dtypes"): per group the shapes, the policies' captures, each ranker's ATen + k captures and
    the fixed selections' (and, where counted, the group's headroom); {} when the shapes hold one
    group."""
    groups = detail["fixed"]["always_aten"].get(split)
    if not groups:
        return {}
    pol = detail.get("policies", {})
    counts = detail["shapes"].get(split, {})
    return {
        g: {
            "shapes": s["shapes"],
            **{k: v for k, v in counts.get(g, {}).items() if k != "shapes"},
            **{mode: (pol[mode][split][g]["capture"] if mode in pol else None) for mode in ("verify", "predict")},
            "aten_plus_k": {
                name: {k: r["aten_plus_k"][k][split][g]["capture"] for k in ks} for name, r in detail["rankers"].items()
            },
            "fixed": {name: f[split][g]["capture"] for name, f in detail["fixed"].items()},
        }
        for g, s in groups.items()
    }


def _cell(shapes: int, v) -> str:
    if shapes < MIN_SHAPES:
        return "-"
    return "n/a" if v is None else f"{100 * v:.1f}%"  # n/a: no headroom on those shapes


def op_table(ops: Mapping, k: int = 4) -> list[str]:
    """Markdown: per op kind (realistic shapes) the cost model's ATen + k capture, the policies'
    and stock DEFAULT's; an op below MIN_SHAPES shapes shows its count and no percentage."""
    if not ops:
        return []
    lines = [
        "",
        f"Per op kind (realistic shapes; GEMM + epilogue groups as `{EPILOGUE_GROUP}`):",
        "",
        f"| op | shapes | cost model ATen + {k} | verify | predict | DEFAULT idealised |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for op, o in ops.items():
        n = o["shapes"]
        ours = o["aten_plus_k"].get("cost_model", {}).get(k)
        cells = [_cell(n, v) for v in (ours, o["verify"], o["predict"], o["fixed"].get("default_idealised"))]
        lines.append(f"| {op} | {n} | " + " | ".join(cells) + " |")
    return lines


def op_text(scheme: str, ops: Mapping, k: int = 4) -> str | None:
    """One line of text output: per op kind the cost model's ATen + k capture (None: one op)."""
    if not ops:
        return None
    parts = []
    for op, o in ops.items():
        n, v = o["shapes"], o["aten_plus_k"].get("cost_model", {}).get(k)
        parts.append(f"{op} {n} shape{'s' if n != 1 else ''}" + ("" if n < MIN_SHAPES else f" {_cell(n, v)}"))
    return f"  per op ({scheme} held out, realistic shapes, ATen + {k} templates): " + "; ".join(parts)


def dtype_text(scheme: str, dtypes: Mapping, k: int = 4) -> str | None:
    """One line of text output: per dtype its shapes, the best candidate's geomean time over
    ATen's, and the captures of verify, predict, the cost model's ATen + k, the nearest-shape
    baseline's ATen + k and stock DEFAULT (None: one dtype)."""
    if not dtypes:
        return None

    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}%"

    parts = []
    for d, o in dtypes.items():
        best = o.get("best_over_aten_geomean")
        near = o["aten_plus_k"].get("nearest_shape", {}).get(k)
        parts.append(
            f"{d} {o['shapes']} shapes"
            + ("" if best is None else f" (best/ATen {best:.3f})")
            + f" verify {pct(o['verify'])} predict {pct(o['predict'])}"
            + f" ATen + {k} {pct(o['aten_plus_k'].get('cost_model', {}).get(k))}"
            + ("" if near is None else f" nearest shape {pct(near)}")
            + f" DEFAULT {pct(o['fixed'].get('default_idealised'))}"
        )
    return f"  per dtype ({scheme} held out, realistic shapes): " + "; ".join(parts)
