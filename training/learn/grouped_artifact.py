"""The grouped-GEMM model's files: the trees fitted by training/learn/grouped_fit.py saved in the one
artifact format (selector/model/artifact.py, kind "grouped-cost-model": XGBoost JSON plus its
sidecar, selector/model/grouped_model.py) and its Markdown card beside them. The selector serves
it where it sits beside the serving cost model for the same card (models/ when shipped)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Mapping

import pandas as pd

from kselect.selector.model import artifact
from kselect.selector.model.grouped_model import grouped_sidecar
from kselect.training.learn.model_card import model_paths


def training_card(rows: pd.DataFrame, trees: int, seed: int, seconds: float) -> dict:
    """What the model was fitted on: rows, problems, shapes, routings, dtypes, backends."""
    return {
        "dataset_rows": int(len(rows)),
        "problems": int(rows["problem_key"].nunique()),
        "shapes": int(rows["shape"].nunique()),
        "routings": sorted(map(str, rows["routing"].unique())),
        "trees": int(trees),
        "seed": int(seed),
        "train_seconds": round(float(seconds), 2),
    }


def save_grouped_model(
    model,
    out: str | Path,
    train_dir: str | Path,
    fingerprint: Mapping,
    card: Mapping,
    evaluation: Mapping,
    command: str,
) -> Path:
    """Write the fitted regressor (`model`: xgboost's XGBRegressor) as `<out>.json` + sidecar, and
    its card `<out>.md`; returns the model file's path. `evaluation`: grouped.evaluate's result
    (its metrics go to the sidecar and the card)."""
    from kselect.training.learn.train import dataset_hash

    model_path, card_path = model_paths(out)
    rows = card["dataset_rows"]
    dtypes = sorted(set(card.get("dtypes") or ("bf16",)))
    meta = grouped_sidecar(
        {"dtypes": dtypes, "backends": ["aten", "triton"], "training": dict(card), "metrics": _metrics(evaluation)},
        fingerprint,
        trained_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        command=command,
        dataset=str(train_dir),
        dataset_hash=dataset_hash(train_dir),
    )
    artifact.save(model.get_booster(), model_path, meta)
    card_path.write_text(_card(model_path, meta, rows), encoding="utf-8")
    return model_path


def _metrics(evaluation: Mapping) -> dict:
    keys = ("problems", "geomean_speedup_vs_plain", "geomean_speedup_vs_stock", "slower_than_plain", "routing_rule")
    return {k: evaluation[k] for k in keys if k in evaluation}


def _card(model_path: Path, meta: Mapping, rows: int) -> str:
    fp, tr, m = meta.get("fingerprint") or {}, meta.get("training") or {}, meta.get("metrics") or {}
    lines = [
        f"# Model card: {model_path.stem}",
        "",
        "Gradient-boosted trees (XGBoost) that predict each `_grouped_mm` candidate's log2(time / ATen's "
        "time) from the grouped features (docs/grouped-mm.md). kselect decides a grouped GEMM with it "
        "only at the choices stage, on the uniform routing the compile sees, inside Inductor's own choices.",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| booster | `{model_path.name}` (XGBoost JSON; sidecar `{artifact.sidecar_path(model_path).name}`) |",
        f"| grouped feature schema | v{meta.get('grouped_feature_schema_version')} "
        f"({len(meta.get('feature_names', []))} features) |",
        f"| ops / dtypes | {meta.get('ops')} / {meta.get('dtypes')} |",
        f"| device | {fp.get('gpu_name')}, {fp.get('sm_count')} SMs, fingerprint `{fp.get('fingerprint_id')}` |",
        f"| dataset | `{meta.get('dataset')}`, sha256 `{meta.get('dataset_hash')}` |",
        f"| rows / problems / shapes | {rows} / {tr.get('problems')} / {tr.get('shapes')} "
        f"(routings {', '.join(tr.get('routings') or [])}) |",
        f"| training command | `{meta.get('command')}` |",
        f"| trained at | {meta.get('trained_at')} ({tr.get('trees')} trees, {tr.get('train_seconds')} s) |",
        "",
        "## Evaluation on the unseen set",
        "",
        "```json",
        json.dumps(m, indent=1, sort_keys=True, default=str),
        "```",
        "",
    ]
    return "\n".join(lines)
