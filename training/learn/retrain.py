"""Make a cost model for a new GPU in one resumable command: shapes, collection, compaction,
training, held-out evaluation, model and card.

    kselect retrain --out runs/h100 [--gpu-minutes 60]

Stages run in order and each records its completion in `<out>/retrain.json`, so a rerun after
a crash or a stopped machine resumes at the first unfinished stage (collection itself resumes
shape by shape). The GPU budget is split between the sampled shapes and the whole-space ones;
a collection stage that reaches its share stops starting shapes and counts as done, and the
card says how many shapes were measured. Every stage prints a line with the time spent and an
estimate of what remains.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from kselect.kernels.problem import Problem, canonical_dtype
from kselect.training.workloads.shapes import (
    MODELS,
    backward_shapes,
    dedup,
    forward_shapes,
    random_shapes,
    write_shapes_csv,
)

STAGES = ("shapes", "collect-sample", "collect-full", "compact", "probe-aten", "train", "evaluate")
STATE_FILE = "retrain.json"
# Share of the GPU budget for the sampled shapes; the rest measures whole spaces.
SAMPLE_SHARE = 0.7
MAX_FP32_FLOPS = 2e11  # an IEEE fp32 shape above this costs too long per candidate
# CPU estimates for the ETA, per 1,000 dataset rows on 2 cores (reports/2026-12-05-cost-model-h200-bf16).
TRAIN_S_PER_K_ROWS = 1.2
EVALUATE_S_PER_K_ROWS = 1.8


class RetrainError(ValueError):
    """Bad retrain arguments, or an output directory made by a different plan."""


@dataclass
class RetrainPlan:
    out: str
    gpu_minutes: float = 60.0
    sample_shapes: int = 160
    full_shapes: int = 24
    sample_space: str = "sample:200"
    seed: int = 0
    nthread: int = 2
    folds: int = 5  # evaluation: GroupKFold-by-shape folds
    cv_folds: int = 5  # training: folds choosing objective and hyper-parameters (0: none)
    name: str = "model"
    dtypes: list = field(default_factory=lambda: ["bf16"])  # the shapes' dtypes, dealt in turn
    done: dict = field(default_factory=dict)  # stage -> {"seconds": ..., ...}

    def __post_init__(self):
        if self.gpu_minutes <= 0:
            raise RetrainError(f"--gpu-minutes must be > 0, got {self.gpu_minutes}")
        if self.sample_shapes < 2 or self.full_shapes < 0:
            raise RetrainError("need >= 2 sampled shapes and >= 0 whole-space shapes")
        try:
            self.dtypes = [canonical_dtype(d) for d in self.dtypes]
        except ValueError as exc:
            raise RetrainError(f"--dtypes: {exc}") from None
        if not self.dtypes or len(set(self.dtypes)) != len(self.dtypes):
            raise RetrainError(f"--dtypes must name each dtype once, got {self.dtypes}")

    @property
    def root(self) -> Path:
        return Path(self.out)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def model_path(self) -> Path:
        return self.root / f"{self.name}.json"

    def settings(self) -> dict:
        """What must match for a rerun to resume this directory."""
        d = asdict(self)
        d.pop("done")
        d.pop("out")
        return d


def choose_shapes(
    seed: int, n_sample: int, n_full: int, dtypes: Sequence[str] = ("bf16",)
) -> tuple[list[Problem], list[Problem]]:
    """Seeded shapes for a new GPU: `n_sample` from every family's forward and backward GEMMs
    and log-uniform random ones (measured over a sample of each space), and `n_full` with
    M <= 256 whose whole space is small enough to measure in full. With several `dtypes` the
    shuffled pool's shapes are dealt to them in turn (bf16 alone: the shapes as before)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = dedup([p for m in MODELS for p in forward_shapes(m) + backward_shapes(m)] + random_shapes(200, seed))
    pool = [p for p in pool if p.flops <= 2e12]  # the largest backward shapes cost minutes each
    order = rng.permutation(len(pool))
    picked = [replace(pool[i], dtype=dtypes[n % len(dtypes)]) for n, i in enumerate(order)]
    # IEEE fp32 runs at ~1/15 of bf16's tensor-core rate: its largest shapes would take minutes
    picked = [p for p in picked if p.dtype != "fp32" or p.flops <= MAX_FP32_FLOPS]
    full = [p for p in picked if p.M <= 256 and p.layout == "nt"][:n_full]
    taken = {p.key for p in full}
    sample = [p for p in picked if p.key not in taken][:n_sample]
    return sample, full


def load_or_start(plan: RetrainPlan) -> RetrainPlan:
    """The plan recorded in `out`, or `plan` itself for a new directory; a directory made with
    other settings is refused by name rather than mixed."""
    state = plan.root / STATE_FILE
    if not state.exists():
        plan.root.mkdir(parents=True, exist_ok=True)
        save(plan)
        return plan
    try:
        recorded = RetrainPlan(**json.loads(state.read_text()))
    except (ValueError, TypeError) as exc:
        raise RetrainError(f"{state} is not a retrain state file: {exc}") from None
    if recorded.settings() != plan.settings():
        diff = {k: (v, plan.settings()[k]) for k, v in recorded.settings().items() if plan.settings()[k] != v}
        raise RetrainError(
            f"{plan.root} was started with other settings {diff} (recorded, asked): "
            "use the same flags to resume, or a new --out"
        )
    # a run directory may have moved (copied back from a GPU machine): it resumes where it is now
    recorded.out = plan.out
    return recorded


def save(plan: RetrainPlan) -> None:
    from kselect.selector.atomic_write import write_text

    write_text(plan.root / STATE_FILE, json.dumps(asdict(plan), indent=1) + "\n")


def _eta(plan: RetrainPlan, stage: str, rows: int) -> float:
    """Seconds the stages from `stage` on should still take (collection: its GPU budget)."""
    left = 0.0
    for s in STAGES[STAGES.index(stage) :]:
        if s in plan.done:
            continue
        if s == "collect-sample":
            left += 60 * plan.gpu_minutes * SAMPLE_SHARE
        elif s == "collect-full":
            left += 60 * plan.gpu_minutes * (1 - SAMPLE_SHARE)
        elif s == "train":
            left += TRAIN_S_PER_K_ROWS * rows / 1e3
        elif s == "evaluate":
            left += EVALUATE_S_PER_K_ROWS * rows / 1e3
    return left


def _rows_expected(plan: RetrainPlan) -> int:
    return plan.sample_shapes * 200 + plan.full_shapes * 450


def run(
    plan: RetrainPlan,
    log: Callable[[str], None] = print,
    collect_fn=None,
    device: str = "cuda",
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Run every unfinished stage; returns the recorded state. `progress` hears the loops of
    training and evaluation (their `progress`)."""
    from kselect.training.measure.collect import collect
    from kselect.training.workloads.shapes import read_shapes_csv

    collect_fn = collect_fn or collect
    plan = load_or_start(plan)
    t_start = time.time()
    rows = _rows_expected(plan)
    sample_csv, full_csv = plan.root / "shapes-sample.csv", plan.root / "shapes-full.csv"
    for i, stage in enumerate(STAGES, start=1):
        if stage in plan.done:
            log(f"[{i}/{len(STAGES)}] {stage}: done earlier")
            continue
        log(
            f"[{i}/{len(STAGES)}] {stage}: starting; {time.time() - t_start:.0f} s so far, about "
            f"{_eta(plan, stage, rows) / 60:.1f} min left"
        )
        t0 = time.time()
        info: dict = {}
        if stage == "shapes":
            sample, full = choose_shapes(plan.seed, plan.sample_shapes, plan.full_shapes, plan.dtypes)
            write_shapes_csv(sample, sample_csv)
            write_shapes_csv(full, full_csv)
            info = {"sample": len(sample), "full": len(full)}
        elif stage in ("collect-sample", "collect-full"):
            sampled = stage == "collect-sample"
            problems = read_shapes_csv(sample_csv if sampled else full_csv)
            share = SAMPLE_SHARE if sampled else 1 - SAMPLE_SHARE
            if problems:
                info = collect_fn(
                    problems,
                    plan.data,
                    space=plan.sample_space if sampled else "exhaustive",
                    max_minutes=plan.gpu_minutes * share,
                    device=device,
                    workloads={p.key: "retrain" for p in problems},
                )
        elif stage == "compact":
            from kselect.training.data.dataset import DatasetDir
            from kselect.training.data.oracle import mark_oracle

            rows = DatasetDir(plan.data).compact(transform=mark_oracle)
            info = {"rows": int(rows)}
        elif stage == "probe-aten":
            info = _probe_aten(plan, device, log)
        elif stage == "train":
            info = _train(plan, log, progress)
        elif stage == "evaluate":
            info = _evaluate(plan, log, progress)
        plan.done[stage] = {"seconds": round(time.time() - t0, 1), **_plain(info)}
        save(plan)
        log(f"[{i}/{len(STAGES)}] {stage}: done in {time.time() - t0:.0f} s {json.dumps(_plain(info))}")
    return asdict(plan)


def _plain(info) -> dict:
    return json.loads(json.dumps(info or {}, default=str))


def _probe_aten(plan: RetrainPlan, device: str, log) -> dict:
    """What ATen launches for each measured problem (the model's ATen-kernel columns); on a
    device without cuBLAS the columns stay missing and the stage says why."""
    from kselect.kernels.aten.launched import probe_possible
    from kselect.training.data.aten_kernels import probe_dataset

    why = "not a CUDA run" if device != "cuda" else probe_possible()
    if why:
        log(f"  ATen's kernels not probed: {why}")
        return {"skipped": why}
    return probe_dataset(plan.data, log)


def _train(plan: RetrainPlan, log, progress=None) -> dict:
    from kselect.training.learn.held_out import load_data
    from kselect.training.learn.model_card import save_trained
    from kselect.training.learn.train import train

    df, fp = load_data(plan.data)
    model, card = train(df, fp, cv_folds=plan.cv_folds, nthread=plan.nthread, log=log, progress=progress)
    save_trained(
        model,
        card,
        fp,
        plan.data,
        plan.model_path,
        f"kselect retrain --out {plan.out} --gpu-minutes {plan.gpu_minutes:g}",
    )
    return {"model": str(plan.model_path), "shapes": card["shapes"], "rows": card["dataset_rows"]}


def _evaluate(plan: RetrainPlan, log, progress=None) -> dict:
    from kselect.selector.model.cost_model import CostModel
    from kselect.training.learn.held_out import load_data, run_evaluation
    from kselect.training.learn.model_card import update_card

    df, fp = load_data(plan.data)
    model = CostModel.load(plan.model_path, fingerprint=fp)
    result, _, _ = run_evaluation(df, fp, model, n_folds=plan.folds, log=log, progress=progress)
    update_card(plan.model_path, result)
    return {"pct_oracle_geomean": result.get("pct_oracle_geomean"), "headroom_capture": result.get("headroom_capture")}
