"""The model's margin over nearest shape at k = 1 and 4 (held out by family, realistic shapes),
with and without the cuBLAS-kernel columns, for each of three seeds: the point margin and a
bootstrap over shapes (2,000 resamples), as in reports/2026-12-05-headroom-h200-bf16/margin_vs_nearest.py.

    python reports/2026-12-05-cublas-kernels/margin_vs_nearest.py > reports/2026-12-05-cublas-kernels/margin-vs-nearest.json
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from features_heldout import feature_sets, held_out  # noqa: E402

from kselect.training.learn.baselines import NearestShapeRanker  # noqa: E402
from kselect.training.learn.ranking_metrics import held_out_costs  # noqa: E402
from kselect.training.learn.headroom import headroom, shape_table, templates_plus_aten  # noqa: E402


def main() -> dict:
    shapes, sets, params = feature_sets()
    real = ~shape_table(shapes)["decision_free"]
    room = headroom(shapes)[real]
    near = held_out_costs(shapes, sets["v1 + cuBLAS kernel"], NearestShapeRanker, "family")
    out = {}
    for seed in (0, 1, 2):
        for name, X in sets.items():
            cost = held_out(shapes, X, params, seed)
            rng = np.random.default_rng(0)
            row = {}
            for k in (1, 4):
                gain_m = np.log(shapes.aten_time / templates_plus_aten(shapes, cost, k))[real]
                gain_n = np.log(shapes.aten_time / templates_plus_aten(shapes, near, k))[real]
                diff = gain_m - gain_n
                boots = [diff[i].sum() / room[i].sum() for i in (rng.integers(0, len(room), len(room)) for _ in range(2000))]
                row[f"k={k}"] = {"model": round(float(gain_m.sum() / room.sum()), 4),
                                 "nearest_shape": round(float(gain_n.sum() / room.sum()), 4),
                                 "margin": round(float(diff.sum() / room.sum()), 4),
                                 "bootstrap_95": [round(float(np.percentile(boots, q)), 4) for q in (2.5, 97.5)]}
            out[f"seed {seed}, {name}"] = row
            print(f"seed {seed}, {name}", json.dumps(row), file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
