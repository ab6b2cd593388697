"""`kselect evaluate`: held-out accuracy of a model's recipe and of every baseline on a dataset
(training/learn/held_out.py computes it; this prints it). With --as-is: the model itself, not
retrained, scored on the dataset -- another card's data included (training/learn/transfer.py)."""

from __future__ import annotations

import json

from kselect.selector.jsonable import json_default
from kselect.training.cli.flags import add_data_model_args, data_and_model
from kselect.training.cli.output import Console
from kselect.training.learn.held_out import SCHEMES, run_evaluation
from kselect.training.learn.op_capture import dtype_text, op_text
from kselect.training.learn.train import dataset_hash
from kselect.training.learn.transfer import DEVICE_FEATURES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="held-out accuracy of a model on a dataset", description=__doc__.split("\n\n")[0]
    )
    add_data_model_args(p)
    p.add_argument("--scheme", choices=("both",) + SCHEMES, default="both")
    p.add_argument("--no-baselines", action="store_true", help="evaluate the cost model only")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument(
        "--as-is",
        action="store_true",
        help="score the model as it is, not its recipe retrained per fold; on any card's data (no "
        "device check: the rows are featurised with the data's card); the nearest-shape baseline "
        "is held out by --scheme (family when 'both')",
    )
    p.add_argument(
        "--device-features",
        choices=DEVICE_FEATURES,
        default="data",
        help="with --as-is: featurise with the data's card (default) or with the card the model was trained on",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    if args.as_is:
        return main_as_is(args)
    df, fp, model = data_and_model(args)
    schemes = SCHEMES if args.scheme == "both" else (args.scheme,)
    console = Console.of(args)
    result, _, _ = run_evaluation(
        df, fp, model, schemes, args.folds, not args.no_baselines, console.log, console.progress
    )
    result.update({"data": str(args.data), "dataset_hash": dataset_hash(args.data), "model": str(args.model)})
    if args.json:
        print(json.dumps(result, indent=1, default=json_default))
    else:
        g = result["pct_oracle_geomean"]
        print(
            f"{result['primary']}: {result['shapes']} shapes; % of oracle "
            + "  ".join(f"k={k} {100 * g[k]:.2f}" for k in g)
            + f"; top-1 {100 * result['top1']:.1f}%"
        )
        if "oracle_shapes" in result:
            o = result["oracle_shapes"]
            print(
                f"  oracle shapes only (full space measured): {o['shapes']} shapes; % of oracle "
                + "  ".join(f"k={k} {100 * v:.2f}" for k, v in o["pct_oracle_geomean"].items())
                + f"; top-1 {100 * o['top1']:.1f}%"
            )
        for line in headroom_lines(result.get("headroom_capture", {})):
            print(line)
    return 0


def main_as_is(args) -> int:
    """--as-is: the model scored as it is on the dataset's rows."""
    from kselect.training.learn.transfer import score_as_is

    df, fp, model = data_and_model(args, check_device=False, refit=False)
    scheme = SCHEMES[0] if args.scheme == "both" else args.scheme
    result, _, _ = score_as_is(df, fp, model, scheme, args.folds, args.device_features)
    data_hash = dataset_hash(args.data)
    meta = getattr(model, "metadata_", {}) or {}
    # the datasets the model learnt from (a pooled model's each, training/learn/model_card.py)
    learnt = {meta.get("dataset_hash")} | {d.get("dataset_hash") for d in meta.get("datasets") or []}
    result.update(
        {
            "data": str(args.data),
            "dataset_hash": data_hash,
            "model": str(args.model),
            # in-sample when the model learnt from these very rows: optimistic
            "model_trained_on_this_data": data_hash in learnt,
        }
    )
    if args.json:
        print(json.dumps(result, indent=1, default=json_default))
        return 0
    g = result["pct_of_oracle"]["all"]["pct_oracle_geomean"]
    print(
        f"{args.model} as is (trained on {result['trained_on']['gpu_name']}), scored on {result['shapes']} shapes "
        f"of {result['scored_on']['gpu_name']}, featurised with {result['featurised_with']['gpu_name']}'s "
        "fingerprint; % of oracle " + "  ".join(f"k={k} {100 * v:.2f}" for k, v in g.items())
    )
    if result["model_trained_on_this_data"]:
        print("  (in-sample: the model was trained on this dataset, so these numbers are optimistic)")
    for line in headroom_lines(result["headroom_capture"], as_is=True):
        print(line)
    return 0


def headroom_lines(hc: dict, as_is: bool = False) -> list[str]:
    """The headroom capture, one line per scheme, realistic shapes (text output); `as_is`: the
    model was scored as it is (only the nearest-shape baseline is held out)."""

    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}%"  # n/a: no headroom on those shapes

    out = []
    for scheme, sec in hc.items():
        r = sec["realistic"]
        ours = r["aten_plus_k"].get("cost_model", {})
        near = r["aten_plus_k"].get("nearest_shape", {})
        pol = "".join(f"; {m} {pct(r[m])}" for m in ("verify", "predict") if m in r)
        out.append(
            f"headroom capture ({'as is, nearest shape ' if as_is else ''}{scheme} held out, "
            f"{r['shapes']} realistic shapes){pol}; ATen + k templates: "
            + "  ".join(f"k={k} {pct(v)}" for k, v in ours.items())
            + (" (nearest shape " + "  ".join(f"k={k} {pct(v)}" for k, v in near.items()) + ")" if near else "")
        )
        for line in (op_text(scheme, r.get("ops", {})), dtype_text(scheme, r.get("dtypes", {}))):
            if line:
                out.append(line)
    return out
