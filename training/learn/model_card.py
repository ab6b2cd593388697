"""A trained model's files: where they go, the sidecar's provenance, and the Markdown card
rendered from the sidecar (again after an evaluation adds its held-out metrics)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kselect.selector.jsonable import json_default
from kselect.selector.model.cost_model import meta_path
from kselect.training.figures.model_card_text import card_text
from kselect.training.figures.spans import block, spans, substitute
from kselect.training.learn.train import dataset_hash


def model_paths(out: str | Path) -> tuple[Path, Path]:
    """--out models/x or models/x.json -> (models/x.json, models/x.md)."""
    out = Path(out)
    if out.suffix in (".json", ".ubj"):
        return out, out.with_suffix(".md")
    return out.with_name(out.name + ".json"), out.with_name(out.name + ".md")


def save_trained(
    model, card: dict, fingerprint, data, model_path: Path, command: str, card_path: Path | None = None
) -> None:
    """Save the booster and its sidecar (device, dataset and its hash, labels, command, the
    training card), then render the Markdown card. A pooled model (training/learn/pooled.py)
    passes its Devices and one dataset path per card, in the order pooled."""
    from kselect.training.learn.pooled import Devices

    meta = {
        "command": command,
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "training": card,
        "metrics": {},
    }
    if isinstance(fingerprint, Devices):
        meta.update(pooled_provenance(fingerprint, [Path(d) for d in data]))
    else:
        meta.update(dataset_provenance(data))
        meta["fingerprint"] = fingerprint
    model.save(model_path, meta)
    write_card(model_path, card_path)


def dataset_provenance(data: str | Path) -> dict:
    """What a sidecar says of one training dataset: path, hash, labels, ATen-kernel columns."""
    return {
        "dataset": str(data),
        "dataset_hash": dataset_hash(data),
        "labels": labels_description(data),
        "aten_kernels": aten_kernels_description(data),
    }


def pooled_provenance(devices, data: list[Path]) -> dict:
    """A pooled model's sidecar fields: every card's fingerprint (`fingerprints`) and every dataset
    with its card's id (`datasets`; a card may have several); `fingerprint` is the first card's (the field one-card readers take), and
    `dataset_hash` the hash of the datasets' hashes in order."""
    import hashlib

    fps = list(devices.fingerprints.values())
    ids = devices.sources or tuple(fp.get("fingerprint_id") for fp in fps)  # one card per dataset when unsaid
    if len(ids) != len(data):
        raise ValueError(f"a pooled model of {len(ids)} datasets needs as many dataset paths, got {len(data)}")
    datasets = [{**dataset_provenance(d), "fingerprint_id": fid} for d, fid in zip(data, ids)]
    joined = "\n".join(d["dataset_hash"] for d in datasets)
    return {
        "fingerprint": fps[0],
        "fingerprints": fps,
        "datasets": datasets,
        "dataset": " + ".join(d["dataset"] for d in datasets),
        "dataset_hash": hashlib.sha256(joined.encode()).hexdigest(),
        "labels": "; ".join(f"{d['dataset']}: {d['labels']}" for d in datasets),
        "aten_kernels": "; ".join(f"{d['dataset']}: {d['aten_kernels']}" for d in datasets),
    }


def labels_description(data: str | Path) -> str:
    """Where the training labels came from: the collector's rows, and the re-timed ones when the
    dataset has a retimed/ directory (load_data folds them in; training/data/labels.py)."""
    from kselect.training.data.dataset import RETIMED_DIR, retimed_summary

    r = retimed_summary(Path(data) / RETIMED_DIR)
    if not r:
        return "collector times"
    return (
        f"collector times, with {r['ok_rows']} rows of {r['shapes_with_ok_rows']} shapes re-timed as "
        f"Inductor's kernels ({r['path']}; training/data/labels.py)"
    )


def aten_kernels_description(data: str | Path) -> str:
    """Where the ATen-kernel columns came from: the dataset's aten_kernels.jsonl (how many of
    its problems, probed on which cards), or missing everywhere."""
    from kselect.training.data.aten_kernels import FILE_NAME, read_records

    records = read_records(data) if Path(data).is_dir() else {}
    if not records:
        return "none recorded: the ATen-kernel columns are missing (NaN) in training"
    cards = sorted({str(r.get("card", "unknown card")) for r in records.values()})
    return f"{len(records)} problems in {FILE_NAME}, probed on {', '.join(cards)}"


def write_card(model_path: Path, card_path: Path | None = None) -> Path:
    """Render the Markdown model card from the sidecar (re-run after evaluation adds metrics).

    The rendered part sits in the card's block `card.<model name>` (the one `kselect
    write-figures` checks). A card that already holds that block keeps everything around it:
    only the block is replaced, so the hand-written sections and their figures' marks survive
    retraining. A new card, or an old one without the block, is the block alone."""
    model_path = Path(model_path)
    card_path = card_path or model_path.with_suffix(".md")
    name = f"card.{model_path.stem}"
    text = card_text(model_path)
    old = card_path.read_text() if card_path.exists() else ""
    if name in dict(spans(old)):
        card_path.write_text(substitute(old, {name: text}))
    else:
        card_path.write_text(block(name, text))
    return card_path


def update_card(model_path: Path, result: dict) -> None:
    """Put the held-out summary into the sidecar and re-render the Markdown card."""
    from kselect.training.learn.summary_table import summary_table

    mp = meta_path(model_path)
    meta = json.loads(mp.read_text())
    fam = result["schemes"]["family"]
    lines = summary_table(fam, "all")
    if "oracle" in fam["cost_model"]:
        lines += ["", "Oracle shapes only:", "", *summary_table(fam, "oracle")]
    shp = result["schemes"]["shape"]
    lines += ["", "GroupKFold by shape, all shapes:", "", *summary_table(shp, "all")]
    lines += [
        "",
        "Targets, all shapes: "
        + "; ".join(f"{k}: {'met' if v[1] else 'NOT met'}" for k, v in result["targets"].items()),
    ]
    if "targets_oracle_shapes" in result:
        lines += [
            "",
            "Targets, oracle shapes only: "
            + "; ".join(f"{k}: {'met' if v[1] else 'NOT met'}" for k, v in result["targets_oracle_shapes"].items()),
        ]
    from kselect.training.learn.headroom_report import card_lines

    lines = card_lines(result)[1:] + [""] + lines if card_lines(result) else lines
    meta["metrics"] = {
        "headroom_capture": {
            k: result["headroom_capture"]["family"]["realistic"][k]
            for k in ("verify", "predict", "aten_plus_k", "fixed")
        }
        if "headroom_capture" in result
        else None,
        "pct_oracle_geomean": result["pct_oracle_geomean"],
        "top1": result["top1"],
        "regret_p99": result["regret_p99"],
        "shapes": result["shapes"],
        "oracle_shapes": result.get("oracle_shapes"),
        "targets": result["targets"],
        "targets_oracle_shapes": result.get("targets_oracle_shapes"),
        "scheme": result["primary"],
        "summary_markdown": "\n".join(lines),
    }
    mp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=json_default) + "\n")
    write_card(model_path)
