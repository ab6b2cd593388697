"""Flag groups several verbs share: which shapes (`shapes`, `collect`, `bench gemm`),
collection over a Ray cluster (`collect`, `retrain`) and kselect's policy (`bench gemm`,
`bench e2e`)."""

from __future__ import annotations

from kselect.kernels.settings import spec
from kselect.training.bench.common import BENCH_SETTINGS, setting_fields
from kselect.training.workloads.shapes import MODELS, WORKLOADS, select_shapes


def add_shape_args(p) -> None:
    """Shape-selection flags shared by every command that takes shapes."""
    p.add_argument(
        "--workload",
        action="append",
        choices=WORKLOADS,
        help="named workload set (repeatable; default: all but the held-out 'unseen')",
    )
    p.add_argument("--models", help=f"comma-separated model families ({','.join(MODELS)})")
    p.add_argument("--shapes-file", help="CSV with columns M,N,K (optional op,dtype,layout,batch,model)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random workload")
    p.add_argument("--n-random", type=int, default=200, help="size of the random workload")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--max-gflop", type=float, default=0.0, help="drop shapes above this many GFLOP")


def shapes_from_args(args) -> tuple[list, dict]:
    """The problems and their workload tags that add_shape_args' flags select."""
    return select_shapes(
        workloads=args.workload,
        models=args.models.split(",") if args.models else None,
        shapes_file=args.shapes_file,
        seed=args.seed,
        n_random=args.n_random,
        dtype=args.dtype,
        max_gflop=args.max_gflop,
    )


def add_ray_args(p) -> None:
    """Collection over a Ray cluster, one task per GPU (training/measure/ray_fanout.py)."""
    p.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="spread the shards over a Ray cluster's GPUs, one task each (ADDRESS: auto, the "
        "default, for the cluster this machine belongs to; local; or host:port); --out must be "
        "a directory every node shares. Needs the ray extra",
    )
    p.add_argument(
        "--ray-shards",
        type=int,
        default=0,
        help="Ray tasks, one shard each (default: one per GPU of the cluster; per CPU with --device cpu)",
    )


def ray_collector(args, compact: bool, log):
    """collect()'s stand-in that add_ray_args' flags ask for (progress lines to `log`), or None
    without --ray; fails at once when Ray is not installed."""
    if args.ray is None:
        return None
    import functools

    from kselect.training.measure.ray_fanout import collect_on_ray, require_ray

    require_ray()
    return functools.partial(collect_on_ray, address=args.ray, shards=args.ray_shards, compact=compact, log=log)


def _flag_type(kind):
    """argparse's type for a setting: the kind's parser, named as the kind for its errors."""

    def parse(raw: str):
        return kind.parse(raw)

    parse.__name__ = kind.describe()
    return parse


def add_policy_args(p) -> None:
    """kselect's policy flags, the same in `bench gemm` and `bench e2e`: one per BENCH_SETTINGS
    entry, made from the setting's declaration (selector.enable's keywords)."""
    fields = setting_fields()
    for name, off_flag in BENCH_SETTINGS.items():
        f, s = fields[name], spec(fields[name])
        text = s.help.replace("%", "%%")  # argparse formats help with %-style params
        if off_flag:
            if f.default is not True:
                raise TypeError(f"{off_flag} turns {name} off, which must be a setting on by default")
            p.add_argument(
                off_flag, dest=name, action="store_false", default=True, help=f"kselect, enable({name}=False): {text}"
            )
        else:
            p.add_argument(
                "--" + name.replace("_", "-"),
                dest=name,
                type=_flag_type(s.kind),
                default=f.default,
                help=f"kselect, enable({name}=...; default {f.default!r}): {text}",
            )


def add_data_model_args(p) -> None:
    """The dataset and the model a held-out evaluation scores (`evaluate`, `report`)."""
    p.add_argument("--data", required=True, help="dataset directory (measurements.parquet + fingerprint.json)")
    p.add_argument("--model", required=True, help="model file (.json) with its .meta.json sidecar")
    p.add_argument("--folds", type=int, default=5, help="GroupKFold-by-shape folds (default 5)")
    p.add_argument("--force", action="store_true", help="use a model trained for another device")
    add_feature_block_arg(
        p,
        "the optional feature block(s) the model was trained with (as `kselect train`'s flag; "
        "default: the ones its sidecar declares, and naming others is an error); epilogue: the "
        "dataset's epilogue_labels.jsonl rows join its bare rows, as train fits them",
    )


def add_feature_block_arg(p, text: str) -> None:
    """--feature-block NAME, repeatable, one of the optional feature blocks (`train`, `evaluate`,
    `report`)."""
    from kselect.selector.model.feature_blocks import FEATURE_BLOCKS

    p.add_argument("--feature-block", action="append", choices=sorted(FEATURE_BLOCKS), default=[], help=text)


def data_and_model(args, check_device: bool = True, refit: bool = True) -> tuple:
    """(rows, fingerprint, model) that add_data_model_args' flags name; with `check_device`
    the model must have been trained for the dataset's device unless --force. The rows are the
    ones the model's feature blocks train on (evaluation.with_block_rows; with `refit` the
    epilogue block's labels must be there, as the held-out folds refit it)."""
    from kselect.selector.model.cost_model import CostModel
    from kselect.training.learn.held_out import evaluation_blocks, load_data, with_block_rows

    df, fp = load_data(args.data)
    model = CostModel.load(args.model, fingerprint=fp if check_device else None, force=args.force)
    blocks = evaluation_blocks(model, args.feature_block)
    return with_block_rows(df, fp, args.data, blocks, required=refit), fp, model
