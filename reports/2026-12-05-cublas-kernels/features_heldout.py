"""Does cuBLAS's own kernel choice, as a feature, help the cost model held out by family?

Appends per-shape facts of the kernels ATen launched (kernels.jsonl, probed on an H100; the
H200 runs the same cuBLAS build with as many SMs) to the schema-v1 features of data/h200-bf16
and refits the shipped recipe (models/h200-bf16.meta.json's hyper-parameters) per held-out
family, for three seeds, with and without them. Prints capture at ATen + k, verify's and
predict's capture and predict's worst pick, on the realistic shapes.

    python reports/2026-12-05-cublas-kernels/features_heldout.py > reports/2026-12-05-cublas-kernels/features-heldout.log
"""

import json
import math
import re
from pathlib import Path

import numpy as np

from kselect.selector.model import cost_model as cost_model_module
from kselect.selector.model.cost_model import CostModel
from kselect.selector.model.features import featurize_frame
from kselect.training.learn.evaluate import ShapeSet, held_out_costs
from kselect.training.learn.evaluation import load_data
from kselect.training.learn.headroom import shape_table, simulate_policies, split_stats, templates_plus_aten
from kselect.training.learn.train import ModelRanker

HERE = Path(__file__).resolve().parent
TILE = re.compile(r"tst_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([hv])")
NAMES = ["cublas_kernels_per_call", "cublas_split_k", "cublas_memset", "cublas_nvjet", "cublas_tile_a",
         "cublas_tile_b", "cublas_tile_k", "cublas_stages", "cublas_cluster_a", "cublas_cluster_b",
         "cublas_coop", "cublas_ctas_log2", "cublas_k_iters_over_stages"]


def kernel_facts(record: dict, M: int, N: int, K: int) -> list[float]:
    calls = max(1, round(record["per_call"]))
    names = record["kernels"][: len(record["kernels"]) // 3 or 1]
    main = next((n for n in names if n.startswith("nvjet") or "cutlass" in n or "gemv" in n), names[0])
    t = TILE.search(main)
    ta, tb, tk, st, ca, cb = (int(t.group(i)) for i in range(1, 7)) if t else (0, 0, 0, 0, 0, 0)
    ctas = math.ceil(N / ta) * math.ceil(M / tb) if t else 0
    return [
        float(calls), float("splitK" in main or any("splitKreduce" in n for n in names)),
        float(any("Memset" in n for n in names)), float(main.startswith("nvjet")), ta, tb, tk, st, ca, cb,
        float("coopA" in main) + 2 * float("coopB" in main), math.log2(max(ctas, 1)),
        (math.ceil(K / tk) / st) if t else 0.0,
    ]


def main() -> None:
    df, fp = load_data("data/h200-bf16")
    shapes = ShapeSet.from_frame(df)
    X = featurize_frame(shapes.rows, fp)
    probe = {json.loads(l)["key"]: json.loads(l) for l in open(HERE / "kernels.jsonl")}
    first = shapes.rows.iloc[shapes.starts]
    per_shape = np.array([kernel_facts(probe[k], m, n, kk) for k, m, n, kk in
                          zip(first.problem_key, first.M, first.N, first.K)], dtype=np.float32)
    Xc = np.concatenate([X, per_shape[shapes.sid]], axis=1)
    v1_names = list(cost_model_module.FEATURE_NAMES)
    base = CostModel.load("models/h200-bf16.json").get_params()
    tab = shape_table(shapes)
    real = ~tab["decision_free"]
    for seed in (0, 1, 2):
        for name, feats in (("schema v1", X), ("v1 + cuBLAS kernel", Xc)):
            params = {**base, "random_state": seed}
            # the estimator checks X against the schema's names: widen them for the extra columns
            cost_model_module.FEATURE_NAMES = v1_names + (NAMES if feats is Xc else [])
            cost = held_out_costs(shapes, feats, lambda: ModelRanker(params), "family")
            sim = simulate_policies(shapes, cost)
            caps = {k: split_stats(shapes, templates_plus_aten(shapes, cost, k), tab)["realistic"]["capture"] for k in (1, 2, 4, 8)}
            ver = split_stats(shapes, sim["verify"], tab)["realistic"]["capture"]
            pre = split_stats(shapes, sim["predict"], tab)["realistic"]
            print(f"seed {seed} {name:20s} k1 {caps[1]:.3f} k2 {caps[2]:.3f} k4 {caps[4]:.3f} k8 {caps[8]:.3f} "
                  f"verify(model 4, no lookup) {ver:.3f} predict {pre['capture']:.3f} worst {pre['worst_pick_over_aten']:.3f} "
                  f"templates {sim['verify_templates'][real].mean():.2f}", flush=True)


if __name__ == "__main__":
    main()
