"""Rule B of reports/device/plan.md on the H100's fp16 / TF32 / fp32 data: one model trained on the
bf16 data and the new dtypes together, held out by family, against hopper-bf16's recipe on the
same H100 folds.

Recipes (models/hopper-bf16's hyper-parameters, `reg:aten`, two threads):
- hopper_bf16: trained on data/h200-bf16 + data/h100-bf16-retrain/data (what models/hopper-bf16 is);
- combined: the same plus data/h100-dtypes/data (the rule's one model).
Folds: the H100's model families, one held out at a time (7 folds; training/learn/transfer.py
card_splits, "pooled"): a fold tests the H100's shapes of one family, every dtype, and both
recipes train on everything else they hold (the H200's shapes of that family included, as
hopper-bf16's card figure was made). The bf16 comparison is on the H100 bf16 shapes; each new
dtype's capture on its own shapes. Baselines on the same shapes: always-ATen (0 by definition),
stock DEFAULT (its list timed, idealised), and the nearest measured shape of the same dtype,
held out by the same folds.

Every model is trained with SEEDS random states (seed 0 is what `kselect train` ships); the
primary figure is the mean over the seeds, as hopper-bf16's card states its 84.7 %. Noise: the
paired shape-and-seed bootstrap (training/learn/capture_bootstrap.py).

    python reports/2026-12-06-dtypes-model-h100/dtypes_table.py     # ~10 min on two cores
writes dtypes.json (every number) and table.md beside itself, after each seed.
DTYPES_TRAINING_SET=pooled_family_out DTYPES_OUT=<folder> runs the same with every card's shapes
of the held-out family left out of training (held out by family, strictly), written there.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from kselect.selector.jsonable import json_default
from kselect.selector.model.cost_model import CostModel
from kselect.training.learn.baselines import NearestShapeRanker
from kselect.training.learn.capture_bootstrap import bootstrap_captures, selection_picks
from kselect.training.learn.headroom import capture_stats, shape_table, templates_plus_aten
from kselect.training.learn.held_out import load_data
from kselect.training.learn.nearest_table import NearestTemplatesRanker
from kselect.training.learn.pooled import card_keys, pool
from kselect.training.learn.ranking_metrics import ShapeSet, default_outcome_times, split_costs
from kselect.training.learn.train import ModelRanker, dataset_hash
from kselect.training.learn.transfer import card_splits

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(os.environ.get("DTYPES_OUT") or Path(__file__).resolve().parent).resolve()
# "pooled": the held-out family's H100 shapes out, its H200 shapes in training (as hopper-bf16's
# card figure was first made); "pooled_family_out": every card's shapes of it out
TRAINING_SET = os.environ.get("DTYPES_TRAINING_SET", "pooled")
DATA = {
    "H200 bf16": "data/h200-bf16",
    "H100 bf16": "data/h100-bf16-retrain/data",
    "H100 dtypes": "data/h100-dtypes/data",
}
RECIPE_MODEL = "models/hopper-bf16.json"
SEEDS = tuple(int(s) for s in os.environ.get("DTYPES_SEEDS", "0,1,2,3,4").split(","))
NTHREAD = 2
RECIPES = ("hopper_bf16", "combined")
MODEL_METRICS = ("verify", "predict", "aten+1", "aten+4")
DTYPES = ("bf16", "fp16", "tf32", "fp32")
# row classes as a serving workload sees them: decode steps, mid-sized batches, prefill
M_CLASSES = (("decode M<=64", 0, 64), ("mid 64<M<=1024", 64, 1024), ("prefill M>1024", 1024, np.inf))
RULE_POINTS, RULE_FLOOR = 0.02, 0.50


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def capture_of(aten, best, pick) -> float | None:
    return capture_stats(aten, best, pick)["capture"]


def nearest_shape_cost(shapes: ShapeSet, X, splits, dtype: np.ndarray) -> np.ndarray:
    """The nearest-shape baseline held out by `splits`, each dtype's shapes ranked from the
    training shapes of the same dtype alone (its distance knows layout and op, not dtype)."""
    cost = np.full(len(shapes.time), np.nan)
    for d in np.unique(dtype):
        mine = dtype == d
        sub = [(n, tr & mine, te & mine) for n, tr, te in splits if (te & mine).any() and (tr & mine).any()]
        c = split_costs(shapes, X, NearestShapeRanker, sub)
        cost = np.where(np.isnan(cost), c, cost)
    return cost


def main() -> None:
    os.chdir(ROOT)
    t0 = time.perf_counter()
    parts = [load_data(p) for p in DATA.values()]
    rows, devices = pool(parts)
    shapes = ShapeSet.from_frame(rows)
    X = devices.featurize(shapes.rows)
    params = {**CostModel.load(RECIPE_MODEL).get_params(), "nthread": NTHREAD}
    h100 = parts[1][1]["fingerprint_id"]
    dtype = shapes.rows["dtype"].astype(str).to_numpy()[shapes.starts]
    log(f"pooled: {shapes.n_shapes} shapes, {len(shapes.rows)} rows; recipe {params}")

    splits = {"combined": card_splits(shapes, h100, TRAINING_SET, "family")}
    splits["hopper_bf16"] = [(n, tr & (dtype == "bf16"), te) for n, tr, te in splits["combined"]]
    on = card_keys(shapes.keys)[0] == h100
    sub, rows_on = shapes.subset(on), on[shapes.sid]
    table = shape_table(sub)
    real = ~table["decision_free"]
    M = table["M"]
    sub_dtype, family = dtype[on], sub.family
    fold_names = [n for n, _, _ in splits["combined"]]

    near_templates = {r: split_costs(shapes, X, NearestTemplatesRanker, splits[r])[rows_on] for r in RECIPES}
    picks = {r: {m: [] for m in MODEL_METRICS} for r in RECIPES}
    near = nearest_shape_cost(shapes, X, splits["combined"], dtype)[rows_on]
    fixed = {
        "always_aten": sub.aten_time.copy(),
        "default": default_outcome_times(sub),
        "nearest_shape aten+1": templates_plus_aten(sub, near, 1),
        "nearest_shape aten+4": templates_plus_aten(sub, near, 4),
    }
    for seed in SEEDS:
        for recipe in RECIPES:
            t = time.perf_counter()
            cost = split_costs(shapes, X, lambda s=seed: ModelRanker({**params, "random_state": s}), splits[recipe])
            sel = selection_picks(sub, cost[rows_on], near_templates[recipe])
            for m in MODEL_METRICS:
                picks[recipe][m].append(sel[m])
            log(f"seed {seed} {recipe}: {len(fold_names)} folds in {time.perf_counter() - t:.0f} s")
        write(summarise(sub, real, M, sub_dtype, family, picks, fixed, fold_names), params, devices, t0)
    log(f"done in {time.perf_counter() - t0:.0f} s")


def summarise(sub, real, M, sub_dtype, family, picks, fixed, fold_names) -> dict:
    """Every number of the report: per dtype (realistic shapes) and M class, per selection."""
    aten, best = sub.aten_time, sub.best
    seeds = len(picks["combined"]["verify"])
    out: dict = {"seeds_done": seeds, "dtypes": {}}
    for d in DTYPES:
        mask = real & (sub_dtype == d)
        room = np.log(aten[mask] / best[mask])
        entry: dict = {
            "shapes": int(mask.sum()),
            "decision_free_shapes": int(((~real) & (sub_dtype == d)).sum()),
            "headroom": {
                "log_sum": float(room.sum()),
                "best_over_aten_geomean": float(np.exp(-room.mean())),
                "shapes_gain_ge_5pct": int((room >= np.log(1.05)).sum()),
            },
            "classes": {},
            "selections": {},
        }
        sel = {f"{r} {m}": np.stack(picks[r][m]) for r in RECIPES for m in MODEL_METRICS}
        sel.update({name: p[None, :] for name, p in fixed.items()})
        boot = bootstrap_captures(aten[mask], best[mask], {k: v[:, mask] for k, v in sel.items()}, reference=None)
        for name, p in sel.items():
            entry["selections"][name] = {
                "capture_mean_over_seeds": boot["captures"][name]["capture"],
                "interval": boot["captures"][name]["interval"],
                "per_seed": [capture_of(aten[mask], best[mask], row[mask]) for row in p],
                # seed 0: the geomean and worst pick time over ATen's, the share > 1 % slower
                "seed_0": capture_stats(aten[mask], best[mask], p[0][mask]),
                "per_family": {
                    str(f): capture_of(
                        aten[mask & (family == f)], best[mask & (family == f)], p[0][mask & (family == f)]
                    )
                    for f in np.unique(family[mask])
                },
            }
        for cname, lo, hi in M_CLASSES:
            cm = mask & (M > lo) & (M <= hi)
            r = np.log(aten[cm] / best[cm])
            entry["classes"][cname] = {
                "shapes": int(cm.sum()),
                "headroom_log_sum": float(r.sum()),
                "best_over_aten_geomean": float(np.exp(-r.mean())) if cm.any() else None,
                "shapes_gain_ge_5pct": int((r >= np.log(1.05)).sum()),
                "captures_mean_over_seeds": {
                    name: (
                        float(np.mean([capture_of(aten[cm], best[cm], row[cm]) or 0.0 for row in p]))
                        if r.sum() > 0
                        else None
                    )
                    for name, p in sel.items()
                },
            }
        out["dtypes"][d] = entry
    bf16 = real & (sub_dtype == "bf16")
    diff = bootstrap_captures(
        aten[bf16],
        best[bf16],
        {r: np.stack(picks[r]["verify"])[:, bf16] for r in RECIPES},
        reference="hopper_bf16",
    )["differences"]["combined"]
    out["rule"] = rule(out, diff)
    out["folds"] = fold_names
    return out


def rule(out: dict, diff: dict) -> dict:
    """Rule B, literally: the combined model ships for all four dtypes when its bf16 verify
    capture is within 2 points of hopper-bf16's on the same H100 folds and each new dtype's
    verify capture is >= 50 %; else each dtype at >= 50 % gets a model of its own."""

    def verify(d, r, seed0=False):
        s = out["dtypes"][d]["selections"][f"{r} verify"]
        return s["per_seed"][0] if seed0 else s["capture_mean_over_seeds"]

    res = {}
    for reading, seed0 in (("mean_over_seeds", False), ("seed_0", True)):
        gap = verify("bf16", "combined", seed0) - verify("bf16", "hopper_bf16", seed0)
        per = {d: verify(d, "combined", seed0) for d in DTYPES[1:]}
        ships = gap >= -RULE_POINTS and all(v >= RULE_FLOOR for v in per.values())
        res[reading] = {
            "bf16_verify_combined": verify("bf16", "combined", seed0),
            "bf16_verify_hopper_bf16": verify("bf16", "hopper_bf16", seed0),
            "bf16_difference": gap,
            "new_dtype_verify": per,
            "combined_ships_for_all_four": ships,
            "own_model_dtypes": [] if ships else [d for d, v in per.items() if v >= RULE_FLOOR],
        }
    res["bf16_difference_bootstrap"] = diff
    return res


def write(result: dict, params: dict, devices, t0: float) -> None:
    result = {
        "question": "rule B (reports/device/plan.md): one model on bf16 + fp16/TF32/fp32 H100 data, held out by family",
        "data": {k: {"path": p, "dataset_hash": dataset_hash(p)} for k, p in DATA.items()},
        "devices": devices.constants(),
        "recipe": params,
        "seeds": list(SEEDS),
        "m_classes": [c[0] for c in M_CLASSES],
        **result,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (REPORT / "dtypes.json").write_text(json.dumps(result, indent=1, default=json_default) + "\n")
    (REPORT / "table.md").write_text(table_md(result))
    log(f"wrote dtypes.json, table.md ({result['seeds_done']} seed(s))")


def pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def table_md(result: dict) -> str:
    """Per dtype: each selection's capture (mean over seeds, its 95 % interval, seed 0), then
    headroom and captures by M class."""
    lines = [f"Seeds done: {result['seeds_done']}. Realistic shapes, held out by family (7 H100 folds).", ""]
    names = list(next(iter(result["dtypes"].values()))["selections"])
    lines += ["| selection | " + " | ".join(f"{d} ({e['shapes']})" for d, e in result["dtypes"].items()) + " |"]
    lines += ["|---" * (len(result["dtypes"]) + 1) + "|"]
    for name in names:
        cells = []
        for e in result["dtypes"].values():
            s = e["selections"][name]
            cells.append(
                f"{pct(s['capture_mean_over_seeds'])} [{pct(s['interval'][0])}..{pct(s['interval'][1])}]"
                + (f" s0 {pct(s['per_seed'][0])}" if len(s["per_seed"]) > 1 else "")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Headroom (realistic shapes): best over ATen geomean, shapes with >= 5 % gain, log-sum", ""]
    lines += [
        "| dtype | class | shapes | best/ATen | >=5 % | log-sum | combined verify | hopper_bf16 verify | DEFAULT |"
    ]
    lines += ["|---" * 9 + "|"]
    for d, e in result["dtypes"].items():
        h = e["headroom"]
        lines.append(
            f"| {d} | all | {e['shapes']} | {h['best_over_aten_geomean']:.3f} | {h['shapes_gain_ge_5pct']} | "
            f"{h['log_sum']:.3f} | {pct(e['selections']['combined verify']['capture_mean_over_seeds'])} | "
            f"{pct(e['selections']['hopper_bf16 verify']['capture_mean_over_seeds'])} | "
            f"{pct(e['selections']['default']['capture_mean_over_seeds'])} |"
        )
        for c, v in e["classes"].items():
            g = v["best_over_aten_geomean"]
            caps = v["captures_mean_over_seeds"]
            lines.append(
                f"| {d} | {c} | {v['shapes']} | {'-' if g is None else f'{g:.3f}'} | {v['shapes_gain_ge_5pct']} | "
                f"{v['headroom_log_sum']:.3f} | {pct(caps['combined verify'])} | {pct(caps['hopper_bf16 verify'])} | "
                f"{pct(caps['default'])} |"
            )
    lines += ["", "Rule B:", "", "```", json.dumps(result["rule"], indent=1, default=json_default), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
