"""`kselect train`: fit the cost model on a measured dataset, write model + sidecar + card.

    kselect train --data data/h200-bf16 --out models/h200-bf16 [--objective auto] [--cv-folds 5]

writes models/h200-bf16.json (XGBoost JSON), models/h200-bf16.meta.json (schema, device,
dataset hash, command, CV table) and models/h200-bf16.md (the model card).
"""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from kselect.selector.model import OBJECTIVES, meta_path

from .evaluate_cli import load_data
from .train import DEFAULT_GRID, HEADROOM_GRID, MAX_ROWS_PER_SHAPE, dataset_hash, train

GRIDS = {"default": DEFAULT_GRID, "single": DEFAULT_GRID[:1], "headroom": HEADROOM_GRID}


def model_paths(out: str | Path) -> tuple[Path, Path]:
    """--out models/x or models/x.json -> (models/x.json, models/x.md)."""
    out = Path(out)
    if out.suffix in (".json", ".ubj"):
        return out, out.with_suffix(".md")
    return out.with_name(out.name + ".json"), out.with_name(out.name + ".md")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("train", help="train the gradient-boosted cost model",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="dataset directory (measurements.parquet + fingerprint.json)")
    p.add_argument("--out", required=True, help="model path without suffix, e.g. models/h200-bf16")
    p.add_argument("--objective", default="auto", choices=("auto",) + tuple(OBJECTIVES),
                   help="auto = cross-validate every objective and keep the best (default)")
    p.add_argument("--cv-folds", type=int, default=5, help="folds for choosing objective/hyper-parameters "
                   "(groups = model family when there are that many, else shape); 0 = no CV")
    p.add_argument("--grid", choices=sorted(GRIDS), default="default", help="hyper-parameter grid")
    p.add_argument("--nthread", type=int, default=2, help="XGBoost threads (default 2)")
    p.add_argument("--max-rows-per-shape", type=int, default=MAX_ROWS_PER_SHAPE,
                   help="training rows kept per shape: all near the best + a sample of the rest")
    p.set_defaults(func=main)


def main(args) -> int:
    t0 = time.perf_counter()
    df, fp = load_data(args.data)
    log = (lambda m: print(m, file=sys.stderr, flush=True))
    model, card = train(df, fp, objective=args.objective, cv_folds=args.cv_folds,
                        grid=GRIDS[args.grid], nthread=args.nthread, max_rows=args.max_rows_per_shape,
                        log=log)
    model_path, card_path = model_paths(args.out)
    command = "kselect train " + " ".join(shlex.quote(a) for a in _argv_after("train"))
    meta = {"fingerprint": fp, "dataset": str(args.data), "dataset_hash": dataset_hash(args.data),
            "labels": labels_description(args.data),
            "training_command": command, "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "training": card, "metrics": {}}
    model.save(model_path, meta)
    write_card(model_path, card_path)
    log(f"wrote {model_path}, {meta_path(model_path)}, {card_path} in {time.perf_counter() - t0:.1f} s")
    return 0


def labels_description(data: str | Path) -> str:
    """Where the training labels came from: the collector's rows, and the re-timed ones when the
    dataset has a retimed/ directory (load_data folds them in; training/labels.py)."""
    from .dataset import RETIMED_DIR, retimed_summary

    r = retimed_summary(Path(data) / RETIMED_DIR)
    if not r:
        return "collector times"
    return (f"collector times, with {r['ok_rows']} rows of {r['shapes_with_ok_rows']} shapes re-timed as "
            f"Inductor's kernels ({r['path']}; training/labels.py)")


def _argv_after(word: str) -> list[str]:
    argv = sys.argv[1:]
    return argv[argv.index(word) + 1:] if word in argv else argv


def _pct(x) -> str:
    return f"{100 * float(x):.2f}%"


def write_card(model_path: Path, card_path: Path | None = None) -> Path:
    """Render the Markdown model card from the sidecar (re-run after evaluation adds metrics)."""
    model_path = Path(model_path)
    meta = json.loads(meta_path(model_path).read_text())
    card_path = card_path or model_path.with_suffix(".md")
    fp = meta.get("fingerprint", {})
    tr = meta.get("training", {})
    lines = [f"# Model card: {model_path.stem}", "",
             "Gradient-boosted trees (XGBoost) that rank TorchInductor's GEMM candidates for one shape.",
             "",
             *(["It predicts each candidate's log(time / cuBLAS's time) for the shape (`reg:aten`): verify "
                "times as many templates as the best predicted gap calls for (0-4, ATen always), predict "
                "takes a template only when it is predicted well ahead of cuBLAS (selector/policy.py).", ""]
               if meta.get("objective") == "reg:aten" else []),
             "| field | value |", "| --- | --- |",
             f"| booster | `{model_path.name}` (XGBoost {meta.get('xgboost_version')} JSON; sidecar `{meta_path(model_path).name}`) |",
             f"| objective | `{meta.get('objective')}` |",
             f"| feature schema | v{meta.get('feature_schema_version')} ({len(meta.get('feature_names', []))} features) |",
             f"| device | {fp.get('gpu_name')}, {fp.get('sm_count')} SMs, fingerprint `{fp.get('fingerprint_id')}` |",
             f"| software | torch {fp.get('torch_version')}, triton {fp.get('triton_version')}, CUDA {fp.get('cuda_version')} |",
             f"| dataset | `{meta.get('dataset')}`, sha256 `{meta.get('dataset_hash')}` |",
             f"| labels | {meta.get('labels', 'collector times')} |",
             f"| rows / shapes | {tr.get('dataset_rows')} rows ({tr.get('train_rows')} sampled for training), "
             f"{tr.get('shapes')} shapes ({tr.get('oracle_shapes')} oracle) |",
             f"| families | {', '.join(tr.get('families', []))} |",
             f"| training command | `{meta.get('training_command')}` |",
             f"| training time | {tr.get('train_seconds')} s on this machine's CPU |",
             f"| trained at | {meta.get('trained_at')} |",
             f"| hyper-parameters | `{json.dumps(meta.get('hyper_parameters'), sort_keys=True)}` |", ""]
    if tr.get("cv_table"):
        lines += [f"## Objective and hyper-parameter choice ({tr.get('cv_scheme')}-grouped CV)", "",
                  f"Selection metric: {tr.get('selection_metric')}.", "",
                  "| objective | depth | eta | trees | min child w | k=1 | k=4 | top-1 | p99 regret k=4 | s |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in tr["cv_table"]:
            g = {int(k): v for k, v in r["pct_oracle_geomean"].items()}
            p99 = {int(k): v for k, v in r["regret_p99"].items()}
            lines.append(f"| {r['objective']} | {r.get('max_depth')} | {r.get('learning_rate')} | "
                         f"{r.get('n_estimators')} | {r.get('min_child_weight')} | {_pct(g[1])} | {_pct(g[4])} | "
                         f"{_pct(r['top1'])} | {_pct(p99[4])} | {r['seconds']} |")
        best = max(tr["cv_table"], key=lambda r: r["score"])
        lines += ["", f"Kept **{best['objective']}** (depth {best.get('max_depth')}): highest held-out "
                  f"score {best['score']:.4f}. {tr.get('objective_reason', '')}", ""]
    ev = meta.get("metrics") or {}
    if ev:
        lines += ["## Held-out metrics (retrained per fold)", "", ev.get("summary_markdown", ""), ""]
    lines += ["## Use", "", "```python",
              "from kselect.selector.model import load_shipped",
              f"model = load_shipped({model_path.name!r}, fingerprint=device_fingerprint)  # refuses other GPUs",
              "```", "",
              "Loading never unpickles; it refuses a feature-schema mismatch always and another GPU "
              "(name or SM count) unless `force=True`.", ""]
    card_path.write_text("\n".join(lines))
    return card_path

