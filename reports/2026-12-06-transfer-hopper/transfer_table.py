"""The transfer table: does one cost model serve both Hopper cards (H100, H200) as well as each
card's own model?

Scored on each card's data, realistic shapes (training/learn/headroom.py), held out by model family:
- own: the card's own recipe, retrained per family fold on the card's other families;
- other_as_is: the other card's model, trained on all the other card's data, scored as it is
  (rows featurised with the scored card's fingerprint); other_as_is_model_features: the same
  featurised with the other card's fingerprint, as the runtime featurises today;
- pooled: the recipe trained on all the other card's data plus this card's other families;
- pooled_family_out: the same less the other card's shapes of the held-out family (no card
  has measured the family: like for like with `own`);
- nearest_shape: the nearest-shape baseline on the card's other families (ATen + k only).
Selections: verify and predict as the selector runs them, ATen + 1 and ATen + 4 templates.
Every model is the shipped recipe (models/h200-bf16's hyper-parameters, one thread), trained
with SEEDS random states; each shape's gain is averaged over the seeds. Noise: a bootstrap
over the realistic shapes, paired across columns, that also draws each column's seeds with
replacement (training/learn/capture_bootstrap.py), of each column's capture minus own's.

The H100 data is a `kselect retrain` run directory in part files: copied to WORK and compacted
there (the committed directory is never touched). Also trains the pooled model on all rows of
both cards into model/ (`kselect train` with two --data).

    python reports/2026-12-06-transfer-hopper/transfer_table.py     # ~7 min on one core
writes transfer.json, table.md and model/hopper-bf16-pooled.{json,meta.json,md} beside itself.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from kselect.selector.jsonable import json_default
from kselect.selector.model.cost_model import CostModel
from kselect.training.cli.main import main as cli_main
from kselect.training.learn.baselines import NearestShapeRanker
from kselect.training.learn.capture_bootstrap import bootstrap_captures, group_captures, selection_picks
from kselect.training.learn.ranking_metrics import ShapeSet, split_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.headroom import shape_counts, shape_table
from kselect.training.learn.nearest_table import NearestTemplatesRanker
from kselect.training.learn.pooled import card_keys, pool
from kselect.training.learn.train import ModelRanker, dataset_hash, train
from kselect.training.learn.transfer import card_splits, score_as_is

REPORT = Path(__file__).resolve().parent
ROOT = REPORT.parents[1]
H200_DATA = Path("data/h200-bf16")
H100_RUN = Path("data/h100-bf16-retrain/data")
RECIPE_MODEL = Path("models/h200-bf16.json")
WORK = Path(os.environ.get("TRANSFER_WORK", "/tmp/transfer-hopper"))
SEEDS = (0, 1, 2, 3, 4)
METRICS = ("verify", "predict", "aten+1", "aten+4")
HELD_OUT = ("own", "pooled", "pooled_family_out")
AS_IS = {"other_as_is": "data", "other_as_is_model_features": "model"}
POOLED_MODEL = REPORT / "model" / "hopper-bf16-pooled"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def compacted_h100() -> Path:
    """A compacted copy of the H100 run's part files under WORK."""
    dst = WORK / "h100-bf16"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(H100_RUN, dst)
    assert cli_main(["dataset", "compact", str(dst)]) == 0
    return dst


def full_model(df, fp, params: dict, seed: int) -> CostModel:
    """The recipe trained on all of one card's rows (`kselect train`'s path, this seed)."""
    grid = (
        {k: params[k] for k in ("max_depth", "learning_rate", "n_estimators", "min_child_weight", "cascade_trees")}
        | {"random_state": seed},
    )
    model, _ = train(df, fp, objective="reg:aten", cv_folds=0, grid=grid, nthread=1, log=lambda _: None)
    model.metadata_ = {"fingerprint": dict(fp)}  # what its saved sidecar would say of its card
    return model


def card_picks(shapes, X, card_fid, params, parts, card, other, other_models) -> tuple[dict, ShapeSet]:
    """{column: {metric: per-shape pick times, one row per seed}} on `card`'s shapes."""
    on = card_keys(shapes.keys)[0] == card_fid
    sub, rows_on = shapes.subset(on), on[shapes.sid]
    picks: dict = {}
    for training_set in HELD_OUT:
        splits = card_splits(shapes, card_fid, training_set, "family")
        near = split_costs(shapes, X, NearestTemplatesRanker, splits)[rows_on]
        per_seed = []
        for seed in SEEDS:
            t = time.perf_counter()
            cost = split_costs(shapes, X, lambda: ModelRanker({**params, "random_state": seed}), splits)[rows_on]
            per_seed.append(selection_picks(sub, cost, near))
            log(f"  {card} {training_set} seed {seed}: {len(splits)} folds in {time.perf_counter() - t:.0f} s")
        picks[training_set] = {m: np.stack([p[m] for p in per_seed]) for m in METRICS}
    cost = split_costs(shapes, X, NearestShapeRanker, card_splits(shapes, card_fid, "own", "family"))[rows_on]
    near_sel = selection_picks(sub, cost, aten_gap=False)
    picks["nearest_shape"] = {m: near_sel[m][None, :] for m in ("aten+1", "aten+4")}
    df, fp = parts[card]
    for column, features in AS_IS.items():
        per_seed = []
        for seed in SEEDS:
            _, costs, scored = score_as_is(df, fp, other_models[seed], "family", device_features=features)
            if not np.array_equal(scored.keys, card_keys(sub.keys)[1]):
                raise RuntimeError("the as-is scoring's shapes are not the pooled card's shapes in order")
            per_seed.append(selection_picks(scored, costs["cost_model"], costs.get("nearest_templates")))
        picks[column] = {m: np.stack([p[m] for p in per_seed]) for m in METRICS}
        log(f"  {card} {column} ({other}'s model as is, {features} features): done")
    return picks, sub


def capture_of(aten, best, pick) -> float:
    gain = np.log(aten / np.where(np.isfinite(pick), pick, aten))
    return float(gain.sum() / np.log(aten / best).sum())


def card_section(sub: ShapeSet, picks: dict, other_keys: set) -> dict:
    """Per selection: the bootstrap (against own), each seed's capture, and the capture per
    held-out family and by whether the other card measured the same shape."""
    real = ~shape_table(sub)["decision_free"]
    aten, best, fam = sub.aten_time[real], sub.best[real], sub.family[real]
    shared = np.isin(card_keys(sub.keys)[1], list(other_keys))[real]
    measured = np.where(shared, "also on the other card", "on this card only")
    out: dict = {
        "shapes": shape_counts(sub),
        "realistic_shapes_also_on_the_other_card": int(shared.sum()),
        "metrics": {},
    }
    for metric in METRICS:
        have = {col: p[metric][:, real] for col, p in picks.items() if metric in p}
        boot = bootstrap_captures(aten, best, have, reference="own")
        out["metrics"][metric] = {
            "bootstrap": boot,
            "per_seed": {col: [capture_of(aten, best, row) for row in p] for col, p in have.items()},
            "per_family": group_captures(aten, best, have, fam),
            "by_other_card_measurement": group_captures(aten, best, have, measured),
        }
    return out


def verdicts(cards: dict) -> dict:
    """The rule: a pooled column ships as the default where, on every card and selection, its
    capture minus own's has a bootstrap interval reaching zero or above (not worse beyond noise)."""
    out = {}
    for column in ("pooled", "pooled_family_out"):
        cells = {
            card: {m: sec["metrics"][m]["bootstrap"]["differences"][column]["within_noise"] for m in METRICS}
            for card, sec in cards.items()
        }
        out[column] = {"within_noise": cells, "ship_as_default": all(v for c in cells.values() for v in c.values())}
    return out


def table_md(result: dict) -> str:
    """Per selection: each column's capture (own: its 95 % interval; the others: the difference
    from own and its interval, in points), and the range over seeds."""
    cols = ("own", "other_as_is", "pooled", "pooled_family_out", "nearest_shape", "other_as_is_model_features")
    lines = []
    for metric in METRICS:
        lines += [f"### {metric}", "", "| scored on | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for card, sec in result["cards"].items():
            boot = sec["metrics"][metric]["bootstrap"]
            cells = []
            for col in cols:
                if col not in boot["captures"]:
                    cells.append("--")
                    continue
                c = boot["captures"][col]
                cell = f"{100 * c['capture']:.1f}"
                if col != "own":
                    d = boot["differences"][col]
                    cell += (
                        f" ({100 * d['difference']:+.1f}; {100 * d['interval'][0]:+.1f}..{100 * d['interval'][1]:+.1f})"
                    )
                else:
                    cell += f" [{100 * c['interval'][0]:.1f}..{100 * c['interval'][1]:.1f}]"
                cells.append(cell)
            lines.append(f"| {card} data ({sec['shapes']['realistic']['shapes']} shapes) | " + " | ".join(cells) + " |")
        lines.append("")
        for card, sec in result["cards"].items():
            seeds = sec["metrics"][metric]["per_seed"]
            lines.append(
                f"Seeds, {card} data: "
                + "; ".join(f"{col} {100 * min(v):.1f}..{100 * max(v):.1f}" for col, v in seeds.items() if len(v) > 1)
                + "  "
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    os.chdir(ROOT)
    WORK.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    h100 = compacted_h100()
    parts = {"H200": load_data(H200_DATA), "H100": load_data(h100)}
    pooled_df, devices = pool([parts["H200"], parts["H100"]])
    shapes = ShapeSet.from_frame(pooled_df)
    X = devices.featurize(shapes.rows)
    params = {**CostModel.load(RECIPE_MODEL).get_params(), "nthread": 1}
    log(f"pooled: {shapes.n_shapes} shapes, {len(shapes.rows)} rows; recipe {params}")
    full = {card: {s: full_model(*parts[card], params, s) for s in SEEDS} for card in parts}
    log("full models trained")
    other = {"H100": "H200", "H200": "H100"}
    cards = {}
    for card in ("H100", "H200"):
        fid = parts[card][1]["fingerprint_id"]
        picks, sub = card_picks(shapes, X, fid, params, parts, card, other[card], full[other[card]])
        cards[card] = card_section(sub, picks, set(parts[other[card]][0]["problem_key"]))
    seed0_h200 = full["H200"][0]
    shipped = CostModel.load(RECIPE_MODEL)
    probe = X[: min(len(X), 5000)]
    result = {
        "question": "held out by family, realistic shapes: each column's headroom capture on each card's data",
        "data": {
            "H200": {"path": str(H200_DATA), "dataset_hash": dataset_hash(H200_DATA)},
            "H100": {"path": f"{H100_RUN} (compacted copy)", "dataset_hash": dataset_hash(h100)},
        },
        "devices": devices.constants(),
        "device_columns_that_differ": devices.differing(),
        "recipe": params,
        "seeds": list(SEEDS),
        "shared_shapes": int(len(set(parts["H100"][0]["problem_key"]) & set(parts["H200"][0]["problem_key"]))),
        "retrained_h200_seed0_equals_shipped": bool(
            np.allclose(seed0_h200.predict(probe), shipped.predict(probe), atol=1e-6)
        ),
        "cards": cards,
        "verdict": None,
    }
    result["verdict"] = verdicts(cards)
    log("pooled model artifact ...")
    POOLED_MODEL.parent.mkdir(exist_ok=True)
    argv = [
        "--quiet",
        "train",
        "--data",
        str(H200_DATA),
        "--data",
        str(h100),
        "--out",
        str(POOLED_MODEL.relative_to(ROOT)),
        "--objective",
        "reg:aten",
        "--grid",
        "headroom",
        "--nthread",
        "1",
    ]
    assert cli_main(argv) == 0
    result["pooled_model"] = {
        "path": str(POOLED_MODEL.relative_to(ROOT)) + ".json",
        "command": "kselect " + " ".join(argv),
    }
    result["seconds"] = round(time.perf_counter() - t0)
    (REPORT / "transfer.json").write_text(json.dumps(result, indent=1, default=json_default) + "\n")
    (REPORT / "table.md").write_text(table_md(result))
    log(f"done in {result['seconds']} s")


if __name__ == "__main__":
    main()
