"""A cost model's card, the part its sidecar gives (models/<name>.md, the block `card.<name>`): what
`kselect train` writes (training/learn/model_card.py) and `kselect write-figures` checks against
the committed card (figures/cards.py), rendered from the sidecars alone."""

from __future__ import annotations

import json
from pathlib import Path

from kselect.selector.model import artifact
from kselect.selector.model.cost_model import meta_path


def _pct(x) -> str:
    return f"{100 * float(x):.2f}%"


def _reach_row(model_path: Path) -> list[str]:
    """The card's row for verify's budget model beside the model (selector/model/reach.py), if any."""
    from kselect.selector.model.reach import reach_path

    path = reach_path(model_path)
    if not meta_path(path).is_file():  # the card renders from sidecars alone
        return []
    meta = json.loads(meta_path(path).read_text())
    tiers = ", ".join(f"<= {b:g}: {n}" for b, n in meta.get("verify_tiers") or ())
    return [
        f"| verify's budget | `{path.name}`: the recipe with the gap target clipped at {meta.get('aten_gap_max')}; "
        f"templates timed by its best template gap ({tiers}, else none); `{meta.get('command')}` |"
    ]


def card_text(model_path: Path) -> str:
    """The model card as its sidecar gives it (`kselect write-figures` writes the same text
    into a card that goes on with hand-written sections)."""
    model_path = Path(model_path)
    meta = json.loads(meta_path(model_path).read_text())
    fp = meta.get("fingerprint", {})
    tr = meta.get("training", {})
    lines = [
        f"# Model card: {model_path.stem}",
        "",
        "Gradient-boosted trees (XGBoost) that rank TorchInductor's GEMM candidates for one shape.",
        "",
        *(
            [
                "It predicts each candidate's log(time / cuBLAS's time) for the shape (`reg:aten`): verify "
                "times as many templates as the best predicted gap calls for (0-4, ATen always; the last of "
                "them the nearest measured shape's pick, from the table in the sidecar), predict "
                "takes a template only when it is predicted well ahead of cuBLAS (selector/decide/gap_policy.py).",
                "",
            ]
            if meta.get("objective") == "reg:aten"
            else []
        ),
        "| field | value |",
        "| --- | --- |",
        f"| booster | `{model_path.name}` (XGBoost {meta.get('xgboost_version')} JSON; sidecar `{meta_path(model_path).name}`) |",
        f"| objective | `{meta.get('objective')}` |",
        f"| feature schema | v{meta.get('feature_schema_version')} ({len(meta.get('feature_names', []))} features) |",
        *[
            f"| device | {f.get('gpu_name')}, {f.get('sm_count')} SMs, fingerprint `{f.get('fingerprint_id')}` |"
            for f in meta.get("fingerprints") or [fp]
        ],
        f"| software | torch {fp.get('torch_version')}, triton {fp.get('triton_version')}, CUDA {fp.get('cuda_version')} |",
        f"| dataset | `{meta.get('dataset')}`, sha256 `{meta.get('dataset_hash')}` |",
        f"| labels | {meta.get('labels', 'collector times')} |",
        *(
            [f"| what cuBLAS launches (ATen-kernel columns) | {meta['aten_kernels']} |"]
            if meta.get("aten_kernels")
            else []
        ),
        f"| rows / shapes | {tr.get('dataset_rows')} rows ({tr.get('train_rows')} sampled for training), "
        f"{tr.get('shapes')} shapes ({tr.get('oracle_shapes')} oracle) |",
        f"| families | {', '.join(tr.get('families', []))} |",
        *(
            [
                f"| dtypes it decides | {', '.join(tr['dtypes'])}"
                + (f" (its data: {', '.join(tr['data_dtypes'])})" if tr.get("data_dtypes") else "")
                + " |"
            ]
            if tr.get("dtypes")
            else []
        ),
        *(
            [f"| predict takes templates for | {', '.join(tr['predict_dtypes']) or 'none'} (the others: cuBLAS) |"]
            if tr.get("predict_dtypes") is not None
            else []
        ),
        *_reach_row(model_path),
        f"| training command | `{artifact.provenance(meta)['command']}` |",
        f"| training time | {tr.get('train_seconds')} s on this machine's CPU |",
        f"| trained at | {meta.get('trained_at')} |",
        f"| hyper-parameters | `{json.dumps(meta.get('hyper_parameters'), sort_keys=True)}` |",
        "",
    ]
    if tr.get("cv_table"):
        lines += [
            f"## Objective and hyper-parameter choice ({tr.get('cv_scheme')}-grouped CV)",
            "",
            f"Selection metric: {tr.get('selection_metric')}.",
            "",
            "| objective | depth | eta | trees | min child w | k=1 | k=4 | top-1 | p99 regret k=4 | s |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in tr["cv_table"]:
            g = {int(k): v for k, v in r["pct_oracle_geomean"].items()}
            p99 = {int(k): v for k, v in r["regret_p99"].items()}
            lines.append(
                f"| {r['objective']} | {r.get('max_depth')} | {r.get('learning_rate')} | "
                f"{r.get('n_estimators')} | {r.get('min_child_weight')} | {_pct(g[1])} | {_pct(g[4])} | "
                f"{_pct(r['top1'])} | {_pct(p99[4])} | {r['seconds']} |"
            )
        best = max(tr["cv_table"], key=lambda r: r["score"])
        lines += [
            "",
            f"Kept **{best['objective']}** (depth {best.get('max_depth')}): highest held-out "
            f"score {best['score']:.4f}. {tr.get('objective_reason', '')}",
            "",
        ]
    ev = meta.get("metrics") or {}
    if ev:
        lines += ["## Held-out metrics (retrained per fold)", "", ev.get("summary_markdown", ""), ""]
    lines += [
        "## Use",
        "",
        "```python",
        "from kselect.selector.model.discovery import load_shipped",
        f"model = load_shipped({model_path.name!r}, fingerprint=device_fingerprint)  # refuses other GPUs",
        "```",
        "",
        "Loading never unpickles; it refuses a feature-schema mismatch always and another GPU "
        "(name or SM count) unless `force=True`.",
        "",
    ]
    return "\n".join(lines)
