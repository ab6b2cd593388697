"""Headroom capture: how much of the measured gain over cuBLAS (ATen) a selection keeps.

Per shape the headroom is log(t_ATen / t_best) >= 0 (t_best: the fastest measured candidate)
and a selection's gain is log(t_ATen / t_pick), negative when the pick is slower than ATen.
Capture = sum of gains / sum of headrooms over a set of shapes: 1 = every shape got its
fastest kernel, 0 = cuBLAS everywhere (or wins and losses cancelling), below 0 = slower than
cuBLAS overall. "% of oracle" hides this: always-ATen already scores ~92 % of it. Beside the
capture: the geometric mean and the worst of t_pick / t_ATen, and the share of shapes whose
pick runs more than 1 % slower than ATen.

Shapes are split as Inductor compiles them:
- decision-free: M = 1 (no GEMM decision is made) or N or K not a multiple of the dtype's
  alignment (8 elements for 16-bit types; Inductor pads such a GEMM before it compiles, so
  the measured shape is not the one it autotunes). Reported apart, never mixed in;
- realistic: every other shape, by row class M <= 16, 16 < M <= 256, M > 256, and by whether
  every operand's leading dimension is 16-byte aligned.

Selections, all on the measured rows of the same shapes:
- `templates_plus_aten`: ATen and the first n templates of a ranking timed (one per tile
  family), the measured-fastest kept -- what verify does; n per shape or fixed k;
- `top_k_times` (evaluate.outcomes): the best measured of a ranking's first k rows, ATen only
  if ranked there -- the ranking on its own;
- verify_with_nearest: the same with one slot for the nearest-shape lookup's pick;
- a single pick per shape (predict).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.stats import gmean

from kselect.selector.model.features import TEMPLATE_CLASSES
from kselect.training.learn.op_capture import flat_groups, op_split, shape_ops
from kselect.training.learn.ranking_metrics import ShapeSet, default_outcome_times, outcomes

HEADROOM_KS = (1, 2, 4, 8)
SLOWER = 1.01  # "slower than ATen": the pick runs > 1 % longer
ALIGN_ELEMENTS = {1: 16, 2: 8, 4: 4, 8: 2}  # dtype bytes -> Inductor's pad alignment (16 bytes)
M_CLASSES = (("M<=16", 0, 16), ("16<M<=256", 16, 256), ("M>256", 256, np.inf))
_ATEN = TEMPLATE_CLASSES.index("aten")


def shape_table(shapes: ShapeSet) -> dict:
    """Per shape: M, N, K, `decision_free` (M = 1 or N/K padded), `m_class` (index into
    M_CLASSES), `aligned` (every leading dimension a multiple of 16 bytes), `dtype` and `op`
    (op_capture.shape_ops: GEMM + epilogue groups apart)."""
    first = shapes.rows.iloc[shapes.starts]
    M, N, K = (first[c].to_numpy(dtype=np.int64) for c in ("M", "N", "K"))
    from kselect.kernels.problem import DTYPE_BYTES

    eb = first["dtype"].astype(str).map(DTYPE_BYTES).to_numpy(dtype=np.int64)
    align = np.array([ALIGN_ELEMENTS.get(int(b), 1) for b in eb], dtype=np.int64)
    padded = (N % align != 0) | (K % align != 0)
    layout = first["layout"].astype(str).to_numpy()
    a_ld = np.where(np.char.startswith(layout.astype(str), "t"), M, K)
    b_ld = np.where(np.char.endswith(layout.astype(str), "t"), K, N)
    aligned = ((a_ld * eb) % 16 == 0) & ((b_ld * eb) % 16 == 0) & ((N * eb) % 16 == 0)
    m_class = np.select([M <= hi for _, _, hi in M_CLASSES], np.arange(len(M_CLASSES)))
    dtype = first["dtype"].astype(str).to_numpy()
    return {
        "M": M,
        "N": N,
        "K": K,
        "decision_free": (M == 1) | padded,
        "m_class": m_class,
        "aligned": aligned,
        "dtype": dtype,
        "op": shape_ops(shapes.rows, shapes.starts, shapes.keys),
    }


def headroom(shapes: ShapeSet) -> np.ndarray:
    """log(t_ATen / t_best) per shape (0 where ATen is the fastest measured)."""
    return np.log(shapes.aten_time / shapes.best)


def capture_stats(aten: np.ndarray, best: np.ndarray, pick: np.ndarray) -> dict:
    """Capture and loss summary of per-shape pick times against ATen's and the best's."""
    aten, best, pick = (np.asarray(a, dtype=np.float64) for a in (aten, best, pick))
    if not (len(aten) == len(best) == len(pick)):
        raise ValueError(f"aten, best and pick differ in length: {len(aten)}, {len(best)}, {len(pick)}")
    if len(aten) == 0:
        return {
            "shapes": 0,
            "capture": None,
            "geomean_pick_over_aten": None,
            "worst_pick_over_aten": None,
            "share_slower_1pct": None,
        }
    pick = np.where(np.isfinite(pick), pick, aten)  # a failed pick falls back to ATen
    room = np.log(aten / best)
    gain = np.log(aten / pick)
    ratio = pick / aten
    total = float(room.sum())
    return {
        "shapes": int(len(aten)),
        "capture": float(gain.sum() / total) if total > 0 else None,
        "geomean_pick_over_aten": float(gmean(ratio)),
        "worst_pick_over_aten": float(ratio.max()),
        "share_slower_1pct": float(np.mean(ratio > SLOWER)),
    }


def tile_family_ids(shapes: ShapeSet) -> np.ndarray:
    """Per row: an id of its tile family (template, BLOCK_M/N/K, split), as verify's
    one-per-family rule groups candidates (selector/decide/families.py tile_family)."""
    rows = shapes.rows
    cols = [shapes.tmpl.astype(np.float64)] + [
        rows[c].fillna(0).to_numpy(dtype=np.float64) for c in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "k_split")
    ]
    _, ids = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    return ids.ravel()


def template_order(shapes: ShapeSet, cost: np.ndarray, one_per_family: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(rows, rank): the templates of each shape by ascending cost (finite costs only, ATen
    left out), keeping the first of each tile family when `one_per_family`; rank counts
    from 0 within the shape."""
    cost = np.asarray(cost, dtype=np.float64)
    usable = np.flatnonzero((shapes.tmpl != _ATEN) & np.isfinite(cost))
    order = usable[np.lexsort((cost[usable], shapes.sid[usable]))]
    if one_per_family and len(order):
        fam = tile_family_ids(shapes)[order]
        sid = shapes.sid[order]
        pair = sid.astype(np.int64) * (int(fam.max()) + 1) + fam
        _, first = np.unique(pair, return_index=True)
        order = order[np.sort(first)]
    sid = shapes.sid[order]
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]]) if len(sid) else np.zeros(0, np.int64)
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return order, rank


def templates_plus_aten(
    shapes: ShapeSet, cost: np.ndarray, n: int | np.ndarray, one_per_family: bool = True
) -> np.ndarray:
    """Per shape: the measured-fastest of ATen and the first `n` templates by `cost` (n a
    number or one per shape) -- verify's outcome, ATen always timed."""
    order, rank = template_order(shapes, cost, one_per_family)
    n_shape = np.broadcast_to(np.asarray(n, dtype=np.int64), (shapes.n_shapes,))
    take = order[rank < n_shape[shapes.sid[order]]]
    best_t = np.full(shapes.n_shapes, np.inf)
    np.minimum.at(best_t, shapes.sid[take], shapes.time[take])
    return np.minimum(best_t, shapes.aten_time)


def pick_times(shapes: ShapeSet, pick_row: np.ndarray) -> np.ndarray:
    """Per shape the measured time of one picked row (-1 = ATen)."""
    pick_row = np.asarray(pick_row, dtype=np.int64)
    t = np.where(pick_row >= 0, shapes.time[np.maximum(pick_row, 0)], shapes.aten_time)
    return np.where(np.isfinite(t), t, shapes.aten_time)


def split_stats(shapes: ShapeSet, pick: np.ndarray, table: Mapping | None = None) -> dict:
    """capture_stats of one selection: realistic shapes, with their row classes and
    alignment, and the decision-free shapes apart."""
    table = table or shape_table(shapes)
    real = ~table["decision_free"]

    def on(mask):
        return capture_stats(shapes.aten_time[mask], shapes.best[mask], pick[mask])

    out = {
        "realistic": on(real),
        "decision_free": on(table["decision_free"]),
        "classes": {},
        "alignment": {"aligned": on(real & table["aligned"]), "unaligned": on(real & ~table["aligned"])},
    }
    for i, (name, _, _) in enumerate(M_CLASSES):
        out["classes"][name] = on(real & (table["m_class"] == i))
    dtypes = np.unique(table["dtype"])
    if len(dtypes) > 1:  # one model over several dtypes: each dtype's capture apart
        out["dtypes"] = {str(d): on(real & (table["dtype"] == d)) for d in dtypes}
    if len(np.unique(table["op"])) > 1:  # several op kinds (or GEMM + epilogue groups): each apart
        out["ops"] = op_split(on, table["op"], real)
    return out


def ranker_curves(shapes: ShapeSet, cost: np.ndarray, ks=HEADROOM_KS, table: Mapping | None = None) -> dict:
    """One ranker's selections at each k: ATen + its first k templates (`aten_plus_k`) and its
    first k rows on their own (`top_k`), each as split_stats."""
    table = table or shape_table(shapes)
    plain = outcomes(shapes, cost, ks)["time"]
    return {
        "aten_plus_k": {k: split_stats(shapes, templates_plus_aten(shapes, cost, k), table) for k in ks},
        "top_k": {k: split_stats(shapes, plain[k], table) for k in ks},
    }


def fixed_selections(shapes: ShapeSet, table: Mapping | None = None) -> dict:
    """Selections that do not depend on k: always ATen, stock DEFAULT's list timed faithfully."""
    table = table or shape_table(shapes)
    return {
        "always_aten": split_stats(shapes, shapes.aten_time.copy(), table),
        "default_idealised": split_stats(shapes, default_outcome_times(shapes), table),
    }


def room_stats(room: np.ndarray) -> dict:
    """How many shapes, and how much headroom they hold: `room` is log(t_ATen / t_best) per shape."""
    return {
        "shapes": int(len(room)),
        "headroom_log_sum": float(room.sum()),
        "best_over_aten_geomean": float(np.exp(-room.mean())) if len(room) else None,
        "shapes_gain_ge_5pct": int((room >= np.log(1.05)).sum()),
    }


def shape_counts(shapes: ShapeSet, table: Mapping | None = None) -> dict:
    """How many shapes fall where, and how much headroom they hold."""
    table = table or shape_table(shapes)
    room = headroom(shapes)
    real = ~table["decision_free"]

    def one(mask):
        return room_stats(room[mask])

    out = {
        "realistic": one(real),
        "decision_free": one(table["decision_free"]),
        "classes": {name: one(real & (table["m_class"] == i)) for i, (name, _, _) in enumerate(M_CLASSES)},
        "alignment": {"aligned": one(real & table["aligned"]), "unaligned": one(real & ~table["aligned"])},
    }
    dtypes = np.unique(table["dtype"])
    if len(dtypes) > 1:  # one model over several dtypes: each dtype's headroom apart
        out["dtypes"] = {str(d): one(real & (table["dtype"] == d)) for d in dtypes}
    return out


def fold_spread(shapes: ShapeSet, pick: np.ndarray, fold_masks, table: Mapping | None = None) -> dict:
    """Realistic capture of one selection per held-out fold, and its spread (max - min and the
    standard deviation over folds with any headroom)."""
    table = table or shape_table(shapes)
    real = ~table["decision_free"]
    per = {}
    for name, mask in fold_masks:
        m = mask & real
        per[name] = capture_stats(shapes.aten_time[m], shapes.best[m], pick[m])["capture"]
    vals = np.array([v for v in per.values() if v is not None])
    return {
        "per_fold": per,
        "spread": float(vals.max() - vals.min()) if len(vals) else None,
        "sd": float(vals.std(ddof=1)) if len(vals) > 1 else None,
    }


def best_template_gaps(shapes: ShapeSet, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per shape: the best-ranked template's row (-1: none) and its cost -- for an ATen-relative
    model ('reg:aten') the predicted log(t_template / t_ATen) the policies decide on."""
    order, rank = template_order(shapes, cost, one_per_family=False)
    top = order[rank == 0]
    row = np.full(shapes.n_shapes, -1, dtype=np.int64)
    row[shapes.sid[top]] = top
    gap = np.where(row >= 0, np.asarray(cost, dtype=np.float64)[np.maximum(row, 0)], np.inf)
    return row, gap


def verify_with_nearest(
    shapes: ShapeSet, cost: np.ndarray, near_cost: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """verify's outcome when the nearest-shape lookup takes a slot (selector/decide/gap_policy.py
    with_nearest_slot, the selector's own rule): per shape the measured-fastest of ATen and the
    templates it times -- the model's first n - 1 tile families by `cost` and the first row by
    `near_cost` (the lookup's preference, finite = listed) of another family. Returns (pick
    times, templates timed)."""
    from kselect.selector.decide.gap_policy import with_nearest_slot

    fam = tile_family_ids(shapes)
    order, _ = template_order(shapes, cost)
    by_shape = np.split(order, np.flatnonzero(np.diff(shapes.sid[order])) + 1) if len(order) else []
    model_rows = [np.zeros(0, np.int64)] * shapes.n_shapes
    for rows in by_shape:
        if len(rows):
            model_rows[shapes.sid[rows[0]]] = rows
    near_cost = np.asarray(near_cost, dtype=np.float64)
    listed = np.flatnonzero(
        np.isfinite(near_cost) & (shapes.tmpl != _ATEN) & np.isfinite(np.asarray(cost, dtype=np.float64))
    )
    listed = listed[np.lexsort((near_cost[listed], shapes.sid[listed]))]
    near_rows = [np.zeros(0, np.int64)] * shapes.n_shapes
    for rows in np.split(listed, np.flatnonzero(np.diff(shapes.sid[listed])) + 1) if len(listed) else []:
        if len(rows):
            near_rows[shapes.sid[rows[0]]] = rows
    pick = shapes.aten_time.copy()
    timed = np.zeros(shapes.n_shapes, dtype=np.int64)
    for s in range(shapes.n_shapes):
        rows_m = model_rows[s]
        kept, _ = with_nearest_slot(
            lambda m: [int(r) for r in rows_m[:m]], int(n[s]), near_rows[s], lambda r: fam[r], lambda r: True
        )
        timed[s] = len(kept)
        if kept:
            pick[s] = min(pick[s], float(np.min(shapes.time[kept])))
    return pick, timed


def simulate_policies(shapes: ShapeSet, cost: np.ndarray, cap: int = 4, near_cost: np.ndarray | None = None) -> dict:
    """verify and predict as the selector runs them on an ATen-relative model's scores
    (selector/decide/gap_policy.py templates_to_time, confident_template), on the measured rows: verify's
    pick is the measured-fastest of ATen and the templates it times (one per tile family; with
    `near_cost`, the held-out nearest-shape lookup's preference per row, one slot goes to the
    lookup as the selector gives it); predict's is its one pick. Returns per-shape pick times and
    templates timed."""
    from kselect.selector.decide.gap_policy import confident_template, templates_to_time

    row, gap = best_template_gaps(shapes, cost)
    n = np.array([min(templates_to_time(g), cap) for g in gap], dtype=np.int64)
    confident = np.array([confident_template(g) for g in gap], dtype=bool)
    if near_cost is None:
        order, _ = template_order(shapes, cost)
        families = np.bincount(shapes.sid[order], minlength=shapes.n_shapes)
        verify, timed = templates_plus_aten(shapes, cost, n), np.minimum(n, families)
    else:
        verify, timed = verify_with_nearest(shapes, cost, near_cost, n)
    return {
        "verify": verify,
        "verify_templates": timed,
        "predict": pick_times(shapes, np.where(confident & (row >= 0), row, -1)),
        "predict_templates": (confident & (row >= 0)).astype(np.int64),
        "gap": gap,
    }


def _caps(section: Mapping) -> float | None:
    return section["capture"]


def headroom_section(
    shapes: ShapeSet,
    costs: Mapping[str, np.ndarray],
    fold_masks,
    aten_gap: bool,
    ks=HEADROOM_KS,
    near_cost: np.ndarray | None = None,
) -> dict:
    """`kselect evaluate`'s headroom_capture for one CV scheme: per selection the split stats,
    with the realistic and decision-free captures flattened on top for reading.

    `costs`: held-out costs per ranker ('cost_model' first); `aten_gap`: the cost model's
    costs are predicted gaps to ATen, so its verify and predict policies are simulated;
    `near_cost`: the held-out nearest-shape lookup's preference per row (verify's lookup slot)."""
    table = shape_table(shapes)
    detail: dict = {
        "shapes": shape_counts(shapes, table),
        "fixed": fixed_selections(shapes, table),
        "rankers": {name: ranker_curves(shapes, c, ks, table) for name, c in costs.items()},
    }
    if aten_gap and "cost_model" in costs:
        sim = simulate_policies(shapes, costs["cost_model"], near_cost=near_cost)
        real = ~table["decision_free"]
        detail["policies"] = {}
        for mode in ("verify", "predict"):
            stats = split_stats(shapes, sim[mode], table)
            stats["templates_timed_mean"] = float(sim[f"{mode}_templates"][real].mean()) if real.any() else None
            stats["templates_timed_counts"] = {
                int(v): int(c) for v, c in zip(*np.unique(sim[f"{mode}_templates"][real], return_counts=True))
            }
            detail["policies"][mode] = stats
    out: dict = {}
    for part in ("realistic", "decision_free"):
        flat: dict = {
            "shapes": detail["shapes"][part]["shapes"],
            "headroom_log_sum": detail["shapes"][part]["headroom_log_sum"],
        }
        for mode in ("verify", "predict"):
            pol = detail.get("policies", {}).get(mode)
            flat[mode] = _caps(pol[part]) if pol else None
        flat["aten_plus_k"] = {
            name: {k: _caps(r["aten_plus_k"][k][part]) for k in ks} for name, r in detail["rankers"].items()
        }
        flat["top_k"] = {name: {k: _caps(r["top_k"][k][part]) for k in ks} for name, r in detail["rankers"].items()}
        flat["fixed"] = {name: _caps(r[part]) for name, r in detail["fixed"].items()}
        out[part] = flat
    out["realistic"]["classes"] = {}
    for cls, _, _ in M_CLASSES:
        pol = detail.get("policies", {})
        out["realistic"]["classes"][cls] = {
            "shapes": detail["shapes"]["classes"][cls]["shapes"],
            **{mode: (pol[mode]["classes"][cls]["capture"] if mode in pol else None) for mode in ("verify", "predict")},
            "aten_plus_k": {
                name: {k: r["aten_plus_k"][k]["classes"][cls]["capture"] for k in ks}
                for name, r in detail["rankers"].items()
            },
            "fixed": {name: r["classes"][cls]["capture"] for name, r in detail["fixed"].items()},
        }
    spread = {}
    for name, c in costs.items():
        for k in (1, 4):
            spread[f"{name}@aten+{k}"] = fold_spread(shapes, templates_plus_aten(shapes, c, k), fold_masks, table)
    if "policies" in detail:
        spread["verify"] = fold_spread(shapes, sim["verify"], fold_masks, table)
        spread["predict"] = fold_spread(shapes, sim["predict"], fold_masks, table)
    out["realistic"]["fold_spread"] = spread
    for split in ("ops", "dtypes"):  # per op kind and per dtype, where the shapes hold several
        groups = flat_groups(detail, ks, split)
        if groups:
            out["realistic"][split] = groups
    out["definition"] = (
        "capture = sum log(t_ATen / t_pick) / sum log(t_ATen / t_best) over the shapes; "
        "realistic = shapes Inductor autotunes as measured (M >= 2, N and K not padded); "
        "aten_plus_k = ATen + the ranker's first k templates timed, one per tile family; "
        "top_k = the ranker's first k rows alone"
    )
    out["detail"] = detail
    return out
