"""Which cuBLAS kernels ATen launched on the realistic shapes of data/h200-bf16, and where the
headroom over them lies: per kernel kind (split-K, a memset before it) and per pipeline depth
(stages), the shapes, those with a template >= 5 % faster, and their share of the log headroom.

    python reports/2026-12-05-cublas-kernels/kernels_vs_headroom.py > reports/2026-12-05-cublas-kernels/kernels-vs-headroom.json
"""

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from kselect.kernels.aten.launched import record_facts
from kselect.training.data.dataset import row_problem
from kselect.training.learn.ranking_metrics import ShapeSet
from kselect.training.learn.held_out import load_data
from kselect.training.learn.headroom import headroom, shape_table


def main() -> dict:
    here = Path(__file__).resolve().parent
    records = [json.loads(line) for line in open(here / "kernels.jsonl")]
    probe = {r["key"]: r for r in records}
    df, _ = load_data("data/h200-bf16")
    shapes = ShapeSet.from_frame(df)
    first = shapes.rows.iloc[shapes.starts]
    real = ~shape_table(shapes)["decision_free"]
    room = headroom(shapes)
    total = room[real].sum()
    groups = defaultdict(list)
    for s in np.flatnonzero(real):
        key = first.problem_key.iloc[s]
        f = record_facts(probe[key], row_problem(first.iloc[s]))
        kind = "split-K" if f["aten_split_k"] else ("memset + kernel" if f["aten_memset"] else "one kernel")
        groups[f"kind: {kind}"].append(s)
        groups[f"stages: {int(f['aten_stages'])}"].append(s)
        groups[f"stages 16, family: {shapes.family[s]}" if f["aten_stages"] == 16 else "stages < 16"].append(s)

    def row(ix):
        ix = np.array(ix)
        return {"shapes": len(ix), "template_5pct_faster": int((room[ix] >= np.log(1.05)).sum()),
                "headroom_share": round(float(room[ix].sum() / total), 3)}

    return {
        "card": (here / "card.txt").read_text().splitlines()[0],
        "problems_probed": len(records),
        "kernels_per_call": dict(Counter(str(r["per_call"]) for r in records)),
        "realistic_shapes": int(real.sum()),
        "groups": {g: row(ix) for g, ix in sorted(groups.items())},
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
