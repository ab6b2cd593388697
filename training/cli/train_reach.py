"""`kselect train-reach`: verify's budget model beside a 'reg:aten' cost model.

    kselect train-reach --model models/h200-bf16 --data data/h200-bf16 [--gap-max 0.7] [--tiers 0.4:4]

writes models/h200-bf16.reach.json and models/h200-bf16.reach.meta.json (kind "reach-model"):
the cost model's recipe refitted with the gap target clipped at --gap-max, whose best template
gap sets how many templates verify times (--tiers: within a bound that many, past the last none;
selector/model/reach.py). Retrain it whenever the cost model is retrained: a reach model trained
beside another version of its cost model is refused at load, and that card's GEMMs go to stock.
"""

from __future__ import annotations

import time
from pathlib import Path

from kselect.selector.model.artifact import ModelError
from kselect.selector.model.cost_model import CostModel, meta_path
from kselect.selector.model.reach import REACH_GAP_MAX, REACH_TIERS, beside_fields, check_tiers, reach_path, save
from kselect.training.cli.output import Console, invocation
from kselect.training.learn.held_out import load_data
from kselect.training.learn.model_card import dataset_provenance, model_paths, pooled_provenance
from kselect.training.learn.pooled import pool
from kselect.training.learn.reach import train_reach


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "train-reach", help="train verify's budget model beside a cost model", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--model", required=True, help="the cost model it serves beside, e.g. models/h200-bf16")
    p.add_argument(
        "--data",
        required=True,
        action="append",
        help="the dataset(s) the cost model was trained on (repeat for a pooled model, in its order)",
    )
    p.add_argument(
        "--gap-max",
        type=float,
        default=REACH_GAP_MAX,
        help=f"the gap target's clip, log(time / ATen's) (default {REACH_GAP_MAX}: 2x slower than ATen)",
    )
    p.add_argument(
        "--tiers",
        default=",".join(f"{b:g}:{n}" for b, n in REACH_TIERS),
        help="verify's budget: BOUND:TEMPLATES pairs, bounds ascending; past the last bound no template is timed "
        f"(default {','.join(f'{b:g}:{n}' for b, n in REACH_TIERS)})",
    )
    p.set_defaults(func=main)


def parse_tiers(text: str) -> tuple[tuple[float, int], ...]:
    """'0.4:4,0.6:1' -> ((0.4, 4), (0.6, 1)); ValueError naming the part that is not BOUND:TEMPLATES."""
    tiers = []
    for part in filter(None, (t.strip() for t in text.split(","))):
        bound, _, n = part.partition(":")
        try:
            tiers.append((float(bound), int(n)))
        except ValueError:
            raise ValueError(f"--tiers {text!r}: {part!r} is not BOUND:TEMPLATES (say 0.4:4)") from None
    return tuple(tiers)


def main(args) -> int:
    t0 = time.perf_counter()
    try:  # before any training: a bad --tiers is said at once
        tiers = check_tiers(parse_tiers(args.tiers))
    except ModelError as exc:
        raise ValueError(f"--tiers {args.tiers!r}: {exc}") from None
    model_path, _ = model_paths(args.model)
    beside = CostModel.load(model_path)
    parts = [load_data(d) for d in args.data]
    df, fp = parts[0] if len(parts) == 1 else pool(parts)
    console = Console.of(args)
    model, card = train_reach(df, fp, beside, args.gap_max, log=console.log, progress=console.progress)
    data = args.data[0] if len(args.data) == 1 else args.data
    meta = {
        "command": invocation(args),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "beside": beside_fields(model_path),
        "aten_gap_max": float(args.gap_max),
        "training": card,
        **(pooled_provenance(fp, [Path(d) for d in data]) if len(parts) > 1 else dataset_provenance(data)),
    }
    if len(parts) == 1:
        meta["fingerprint"] = fp
    out = reach_path(model_path)
    save(model, out, meta, tiers)
    console.log(f"wrote {out} and {meta_path(out)} in {time.perf_counter() - t0:.1f} s")
    return 0
