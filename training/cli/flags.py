"""Flag groups several verbs share: which shapes (`shapes`, `collect`, `bench gemm`) and
kselect's policy (`bench gemm`, `bench e2e`)."""
from __future__ import annotations

from kselect.training.workloads.shapes import MODELS, WORKLOADS, select_shapes


def add_shape_args(p) -> None:
    """Shape-selection flags shared by every command that takes shapes."""
    p.add_argument("--workload", action="append", choices=WORKLOADS,
                   help="named workload set (repeatable; default: all but the held-out 'unseen')")
    p.add_argument("--models", help=f"comma-separated model families ({','.join(MODELS)})")
    p.add_argument("--shapes-file", help="CSV with columns M,N,K (optional op,dtype,layout,batch,model)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random workload")
    p.add_argument("--n-random", type=int, default=200, help="size of the random workload")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--max-gflop", type=float, default=0.0, help="drop shapes above this many GFLOP")


def shapes_from_args(args) -> tuple[list, dict]:
    """The problems and their workload tags that add_shape_args' flags select."""
    return select_shapes(workloads=args.workload, models=args.models.split(",") if args.models else None,
                         shapes_file=args.shapes_file, seed=args.seed, n_random=args.n_random,
                         dtype=args.dtype, max_gflop=args.max_gflop)


def add_policy_args(p) -> None:
    """kselect's policy flags, the same in `bench gemm` and `bench e2e` (selector.enable's keywords)."""
    from kselect.selector.decide.policy import ATEN_MARGIN_SD, COMPILE_BUDGET

    p.add_argument("--k", type=int, default=4, help="kselect verify: most candidates kept per stage")
    p.add_argument("--fixed-k", action="store_true", help="kselect verify keeps k whatever the scores' "
                   "gaps (enable(adaptive_k=False))")
    p.add_argument("--min-k", type=int, default=1, help="kselect verify, adaptive: never keep fewer "
                   "ranked candidates (enable(min_k=...); default 1)")
    p.add_argument("--aten-margin", type=float, default=ATEN_MARGIN_SD, help="kselect predict: a Triton "
                   "top-1 must out-score ATen by this many sd (enable(aten_margin=...); 0 = plain top-1)")
    p.add_argument("--compile-budget", type=float, default=COMPILE_BUDGET, help="kselect verify on CUDA: pass "
                   "over a kept template predicted to compile more than this many times as long as the "
                   "top-1 (enable(compile_budget=...); 0 = no pricing)")
    p.add_argument("--cold-start", action="store_true", help="kselect: no warm start -- the compile "
                   "prepares Triton and meets cold compile workers as stock does (enable(warm_start=False))")
    p.add_argument("--late-decision", action="store_true", help="kselect: decide over Inductor's generated "
                   "choices instead of before generation (enable(early_decision=False)); same picks")


def add_data_model_args(p) -> None:
    """The dataset and the model a held-out evaluation scores (`evaluate`, `report`)."""
    p.add_argument("--data", required=True, help="dataset directory (measurements.parquet + fingerprint.json)")
    p.add_argument("--model", required=True, help="model file (.json) with its .meta.json sidecar")
    p.add_argument("--folds", type=int, default=5, help="GroupKFold-by-shape folds (default 5)")
    p.add_argument("--force", action="store_true", help="use a model trained for another device")


def data_and_model(args) -> tuple:
    """(rows, fingerprint, model) that add_data_model_args' flags name; the model must have
    been trained for the dataset's device unless --force."""
    from kselect.selector.model.cost_model import CostModel
    from kselect.training.learn.evaluation import load_data

    df, fp = load_data(args.data)
    return df, fp, CostModel.load(args.model, fingerprint=fp, force=args.force)
