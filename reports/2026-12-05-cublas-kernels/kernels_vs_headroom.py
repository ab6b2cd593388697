"""Which cuBLAS kernels ATen launched on the realistic shapes of data/h200-bf16, and where the
headroom over them lies: per kernel kind (split-K, a memset before it) and per pipeline depth
(stages), the shapes, those with a template >= 5 % faster, and their share of the log headroom.

    python reports/2026-12-05-cublas-kernels/kernels_vs_headroom.py > reports/2026-12-05-cublas-kernels/kernels-vs-headroom.json
"""

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from features_heldout import NAMES, kernel_facts  # noqa: E402

from kselect.training.learn.evaluate import ShapeSet  # noqa: E402
from kselect.training.learn.evaluation import load_data  # noqa: E402
from kselect.training.learn.headroom import headroom, shape_table  # noqa: E402


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
        f = dict(zip(NAMES, kernel_facts(probe[key], first.M.iloc[s], first.N.iloc[s], first.K.iloc[s])))
        kind = "split-K" if f["cublas_split_k"] else ("memset + kernel" if f["cublas_memset"] else "one kernel")
        groups[f"kind: {kind}"].append(s)
        groups[f"stages: {int(f['cublas_stages'])}"].append(s)
        groups[f"stages 16, family: {shapes.family[s]}" if f["cublas_stages"] == 16 else "stages < 16"].append(s)

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
