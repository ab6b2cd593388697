"""Held-out evaluation of a model's recipe and of every baseline on a dataset.

Held-out means retrained per fold: the saved model's objective and hyper-parameters are
refitted on the training folds and scored on shapes it never saw, under two schemes:
GroupKFold by shape, and leave-one-model-family-out. The saved model itself is also scored
as shipped ('in_sample' -- optimistic when the dataset is the one it was trained on).
The top-level keys summarise leave-one-family-out over all shapes. `kselect evaluate` and
`kselect report` print and plot what this computes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import TEMPLATE_CLASSES, infeasible
from kselect.training.data.aten_kernels import attach as attach_aten_kernels
from kselect.training.data.aten_kernels import read_records as read_aten_kernels
from kselect.training.data.dataset import DatasetDir, DatasetError, load_dataset
from kselect.training.data.labels import apply_retimed
from kselect.training.learn.baselines import baseline_rankers
from kselect.training.learn.headroom import headroom_section
from kselect.training.learn.nearest_table import LOOKUP, NearestTemplatesRanker
from kselect.training.learn.pooled import featurize_rows
from kselect.training.learn.ranking_metrics import (
    KS,
    EvaluationError,
    ShapeSet,
    default_metrics,
    evaluate_costs,
    folds,
    held_out_costs,
)
from kselect.training.learn.train import MAX_ROWS_PER_SHAPE, ModelRanker, per_shape_selection_cost
from kselect.training.measure.retime import default_out

SCHEMES = ("family", "shape")
BASELINES = ("roofline", "random_forest", "nearest_shape", "default")
TARGETS = {"pct_oracle_geomean_k4": 0.99, "pct_oracle_geomean_k1": 0.97, "pct_oracle_p1_k4": 0.90}


def load_data(data: str | Path, retimed: bool = True) -> tuple:
    """(rows, fingerprint) of a dataset directory; with `retimed`, the labels fold in the
    Inductor-kernel times of its `retimed/` subdirectory when there is one (training/data/labels.py);
    rows carry the ATen-kernel columns of its aten_kernels.jsonl when there is one."""
    df = load_dataset(data)
    ds = DatasetDir(Path(data))
    if not ds.fingerprint_path.exists():
        raise FileNotFoundError(f"{data} has no fingerprint.json: cannot featurise without the device")
    fp = ds.read_fingerprint()
    again = DatasetDir(default_out(data))
    if retimed and Path(data).is_dir() and again.exists():
        if again.fingerprint_path.exists() and again.read_fingerprint().get("fingerprint_id") != fp.get(
            "fingerprint_id"
        ):
            raise DatasetError(f"{again.root} was re-timed on another device than {data} was measured on")
        df = apply_retimed(df, again.load())
    # what ATen launches for each problem, where the dataset recorded it (the model's ATen-kernel columns)
    df = attach_aten_kernels(df, read_aten_kernels(data))
    return df, fp


def evaluation_blocks(model: CostModel, requested=()) -> tuple[str, ...]:
    """The optional feature blocks a held-out evaluation of `model` featurises with: the ones its
    sidecar declares (its recipe is refitted, and the model itself scored, on those columns).
    `requested` (--feature-block) must name the same blocks, else an EvaluationError says both."""
    declared = tuple(getattr(model, "feature_blocks_", ()) or ())
    requested = tuple(dict.fromkeys(requested))
    if requested and set(requested) != set(declared):
        have = f"feature block(s) {list(declared)}" if declared else "no feature block"
        flags = " ".join(f"--feature-block {b}" for b in declared) or "no --feature-block"
        raise EvaluationError(
            f"--feature-block {' '.join(requested)} asked for, but the model was trained with {have}: "
            f"evaluate it with {flags}, or evaluate a model trained with those blocks"
        )
    return declared


def with_block_rows(df, fingerprint: dict, data: str | Path, blocks=(), required: bool = True):
    """The rows `df` (load_data's, of dataset `data`) with its GEMM + epilogue label rows appended
    when the epilogue block is among `blocks`: the rows `kselect train --feature-block epilogue` fits.
    Without `required` (a model scored as is, never refitted) a dataset without labels keeps its rows."""
    from kselect.training.data.epilogue_rows import EpilogueLabelsError, path_of, with_label_rows

    if "epilogue" not in blocks or not (required or path_of(data).exists()):
        return df
    try:
        [(rows, _)] = with_label_rows([(df, fingerprint)], [data])
    except EpilogueLabelsError as exc:  # its folds would refit the block on no epilogue at all
        raise EvaluationError(
            f"the model was trained with the epilogue feature block (--feature-block epilogue), whose "
            f"held-out refits need the dataset's GEMM + epilogue labels: {exc}"
        ) from None
    return rows


def run_evaluation(
    df,
    fingerprint: dict,
    model: CostModel,
    schemes=SCHEMES,
    n_folds: int = 5,
    baselines: bool = True,
    log: Callable = print,
    progress: Callable[[str, int, int], None] | None = None,
    blocks=(),
) -> tuple[dict, dict, ShapeSet]:
    """Returns (result JSON, held-out costs {scheme: {ranker: array}}, the shapes) for reports;
    the costs also hold 'raw' (the model's plain predictions) and, for an ATen-relative model,
    LOOKUP (verify's nearest-shape lookup), each {scheme: array}. `progress` hears
    ("held-out fits", done, total): one fit per fold, scheme and ranker. Every ranker sees the
    model's optional feature blocks' columns (evaluation_blocks; `blocks` must agree), featurised
    as training does (pooled.featurize_rows)."""
    t0 = time.perf_counter()
    blocks = evaluation_blocks(model, blocks)
    shapes = ShapeSet.from_frame(df)
    X = featurize_rows(shapes.rows, fingerprint, blocks)
    params = model.get_params()
    max_rows = int(
        ((getattr(model, "metadata_", {}) or {}).get("training") or {}).get("max_rows_per_shape", MAX_ROWS_PER_SHAPE)
    )
    rankers = {"cost_model": lambda: ModelRanker(params, max_rows, blocks=blocks)}
    if baselines:
        rankers.update(baseline_rankers())
    result: dict = {
        "ks": list(KS),
        "schemes": {},
        "dropped_shapes": int(shapes.dropped),
        "objective": params["objective"],
        "hyper_parameters": params,
        "feature_blocks": list(blocks),
    }
    costs: dict = {}
    timings: dict = {}
    n_splits = {scheme: len(folds(shapes, scheme, n_folds)) for scheme in schemes}
    fits, fitted = len(rankers) * sum(n_splits.values()), 0
    for scheme in schemes:
        res, costs[scheme] = {}, {}
        for name, make in rankers.items():
            t = time.perf_counter()
            log(f"{scheme}: {name} ...")
            raw = np.full(len(X), np.nan) if name == "cost_model" else None
            tick = (lambda done, _, before=fitted: progress("held-out fits", before + done, fits)) if progress else None
            c = held_out_costs(shapes, X, make, scheme, n_folds, progress=tick, raw_out=raw)
            fitted += n_splits[scheme]
            costs[scheme][name] = c
            res[name] = evaluate_costs(shapes, c, KS)
            if raw is not None:
                costs.setdefault("raw", {})[scheme] = raw
                full = evaluate_costs(shapes, np.where(infeasible(X), np.inf, raw), KS)
                result.setdefault("cascade_check", {})[scheme] = {
                    "with_cascade": res[name]["all"]["pct_oracle_geomean"],
                    "all_trees_on_every_row": full["all"]["pct_oracle_geomean"],
                }
            timings[f"{scheme}/{name}_s"] = round(time.perf_counter() - t, 1)
            g = res[name]["all"]["pct_oracle_geomean"]
            log(f"  {name}: " + "  ".join(f"k={k} {g[k]:.4f}" for k in KS))
        # policy variant, no retraining: always benchmark ATen, then the model's top k-1
        aten_first = np.where(shapes.tmpl == TEMPLATE_CLASSES.index("aten"), -np.inf, costs[scheme]["cost_model"])
        costs[scheme]["cost_model_aten_first"] = aten_first
        res["cost_model_aten_first"] = evaluate_costs(shapes, aten_first, KS)
        res["default"] = default_metrics(shapes)
        result["schemes"][scheme] = res
        rankers_only = {k: v for k, v in costs[scheme].items() if k != "cost_model_aten_first"}
        aten_gap = bool(getattr(model, "aten_relative", False))
        if aten_gap:  # verify's nearest-shape slot: the shipped table, rebuilt on each training fold
            costs.setdefault(LOOKUP, {})[scheme] = held_out_costs(shapes, X, NearestTemplatesRanker, scheme, n_folds)
        result.setdefault("headroom_capture", {})[scheme] = headroom_section(
            shapes, rankers_only, folds(shapes, scheme, n_folds), aten_gap, near_cost=costs.get(LOOKUP, {}).get(scheme)
        )
    in_sample = per_shape_selection_cost(model, shapes.sid, X)
    result["in_sample"] = evaluate_costs(shapes, in_sample, KS)
    costs["in_sample"] = {"cost_model": in_sample}
    main = result["schemes"][schemes[0]]["cost_model"]
    for key in ("pct_oracle_geomean", "top1", "regret_p99", "shapes", "recall", "pct_oracle_p1"):
        result[key] = main["all"][key]
    result["primary"] = f"{schemes[0]} held-out, all shapes"
    if "oracle" in main:
        result["oracle_shapes"] = {
            k: main["oracle"][k] for k in ("shapes", "pct_oracle_geomean", "top1", "regret_p99", "pct_oracle_p1")
        }
    result["targets"] = check_targets(result["schemes"][schemes[0]])
    if "oracle" in main:
        # the strict reading: the oracle is the best of the full space, not of a sample
        result["targets_oracle_shapes"] = check_targets(result["schemes"][schemes[0]], "oracle")
    timings["total_s"] = round(time.perf_counter() - t0, 1)
    result["timings"] = timings
    return result, costs, shapes


def check_targets(res: dict, subset: str = "all") -> dict:
    """The issue's targets on one scheme's results ('all' shapes or 'oracle' shapes only):
    met or not, with the numbers."""
    ours = res["cost_model"][subset]
    read = {
        "pct_oracle_geomean_k4": ours["pct_oracle_geomean"][4],
        "pct_oracle_geomean_k1": ours["pct_oracle_geomean"][1],
        "pct_oracle_p1_k4": ours["pct_oracle_p1"][4],
    }
    out = {f"{name}>={bound:.2f}": [read[name], read[name] >= bound] for name, bound in TARGETS.items()}
    worse = []
    for name, r in res.items():
        if name not in BASELINES or subset not in r:
            continue
        a = r[subset]
        for k in ours["pct_oracle_geomean"]:
            theirs = a["pct_oracle_geomean"] if name == "default" else a["pct_oracle_geomean"][k]
            if ours["pct_oracle_geomean"][k] <= theirs:
                worse.append(f"{name}@k={k}")
    out["beats_every_baseline_at_every_k"] = [worse, not worse]
    return out
