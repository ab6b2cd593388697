"""Does cuBLAS's own kernel choice, as a feature, help the cost model held out by family?

data/h200-bf16 carries, per problem, the kernels ATen launched (aten_kernels.jsonl, probed on
an H100 -- the same records as kernels.jsonl here; the H200 runs the same cuBLAS build with as
many SMs), which load_data turns into the ATen-kernel columns (kernels/aten/launched.py). This
refits the shipped recipe (models/h200-bf16.meta.json's hyper-parameters) per held-out family,
for three seeds, on schema v1 (the features without those columns) and with them. Prints
capture at ATen + k, verify's and predict's capture and predict's worst pick, on the realistic
shapes.

    python reports/2026-12-05-cublas-kernels/features_heldout.py > reports/2026-12-05-cublas-kernels/features-heldout.log
"""

from contextlib import contextmanager

import numpy as np

from kselect.kernels.aten.launched import ATEN_KERNEL_COLUMNS
from kselect.selector.model import cost_model as cost_model_module
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import FEATURE_NAMES, featurize_frame
from kselect.training.learn.ranking_metrics import ShapeSet, held_out_costs
from kselect.training.learn.held_out import load_data
from kselect.training.learn.headroom import shape_table, simulate_policies, split_stats, templates_plus_aten
from kselect.training.learn.train import ModelRanker

# schema v1: every column but the ATen-kernel ones, which the schema appends at its end
V1_NAMES = [n for n in FEATURE_NAMES if n not in ATEN_KERNEL_COLUMNS]
assert list(FEATURE_NAMES[: len(V1_NAMES)]) == V1_NAMES


def feature_sets():
    """(shapes, {"schema v1": X without the ATen-kernel columns, "v1 + cuBLAS kernel": X}, the
    shipped recipe's hyper-parameters)."""
    df, fp = load_data("data/h200-bf16")
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    assert np.isfinite(X[:, len(V1_NAMES) :]).all(), "a problem without its cuBLAS record"
    params = CostModel.load("models/h200-bf16.json").get_params()
    return shapes, {"schema v1": X[:, : len(V1_NAMES)], "v1 + cuBLAS kernel": X}, params


@contextmanager
def schema_of(X):
    """The estimator checks X against the schema's names: give it the names of X's columns."""
    saved = cost_model_module.FEATURE_NAMES
    cost_model_module.FEATURE_NAMES = tuple(FEATURE_NAMES[: X.shape[1]])
    try:
        yield
    finally:
        cost_model_module.FEATURE_NAMES = saved


def held_out(shapes, X, params, seed: int) -> np.ndarray:
    """Per-row costs, each family's from a model fitted on the others (seed `seed`)."""
    fitted = {**params, "random_state": seed}
    with schema_of(X):
        return held_out_costs(shapes, X, lambda: ModelRanker(fitted), "family")


def main() -> None:
    shapes, sets, params = feature_sets()
    tab = shape_table(shapes)
    real = ~tab["decision_free"]
    for seed in (0, 1, 2):
        for name, X in sets.items():
            cost = held_out(shapes, X, params, seed)
            sim = simulate_policies(shapes, cost)
            caps = {k: split_stats(shapes, templates_plus_aten(shapes, cost, k), tab)["realistic"]["capture"] for k in (1, 2, 4, 8)}
            ver = split_stats(shapes, sim["verify"], tab)["realistic"]["capture"]
            pre = split_stats(shapes, sim["predict"], tab)["realistic"]
            print(f"seed {seed} {name:20s} k1 {caps[1]:.3f} k2 {caps[2]:.3f} k4 {caps[4]:.3f} k8 {caps[8]:.3f} "
                  f"verify(model 4, no lookup) {ver:.3f} predict {pre['capture']:.3f} worst {pre['worst_pick_over_aten']:.3f} "
                  f"templates {sim['verify_templates'][real].mean():.2f}", flush=True)


if __name__ == "__main__":
    main()
