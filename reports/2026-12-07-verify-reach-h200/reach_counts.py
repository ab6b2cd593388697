"""How many templates verify times on each GEMM of a shapes file under the H200's shipped model and
its reach model (the count the reach budget sets; the ranking is the model's), on this CPU: the
decision kselect's enumeration gives (its exhaustive space, as the early decision ranks it), the
ATen probe's columns missing as on any CPU. Writes the counts (counts.csv) and the GEMMs timing
none (none.csv, the GPU run's shapes file).

    python reports/2026-12-07-verify-reach-h200/reach_counts.py data/shapes/unseen-bench.csv
"""

import json
import sys
from pathlib import Path

import pandas as pd

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.config import SelectorSettings
from kselect.selector.decide.policy import choose_kept
from kselect.selector.inductor.device_rankers import DeviceRankers

HERE = Path(__file__).parent
REPO = HERE.parents[1]


def counts(shapes: pd.DataFrame) -> pd.DataFrame:
    fp = json.loads((REPO / "data" / "h200-bf16" / "fingerprint.json").read_text())
    settings = SelectorSettings.from_keywords(mode="verify", compile_budget=0)
    ranker = DeviceRankers(settings).ranker_for(dict(fp, device_type="cuda"))
    rows = []
    for row in shapes.itertuples():
        problem = Problem(int(row.M), int(row.N), int(row.K), row.dtype, row.layout)
        candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
        scores, gaps = ranker.rank_with_reach(problem, candidates)
        kept, why = choose_kept(
            candidates, scores, "verify", settings.k, True, False, aten_gap=True, reach=(gaps, ranker.reach.tiers)
        )
        rows.append(
            {
                "problem": problem.key,
                "templates": sum(candidates[i].backend != "aten" for i in kept),
                "why": why,
            }
        )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    shapes = pd.read_csv(sys.argv[1])
    got = counts(shapes)
    got.to_csv(HERE / "counts.csv", index=False)
    shapes[(got["templates"] == 0).to_numpy()].to_csv(HERE / "none.csv", index=False)
    print(f"{len(got)} GEMMs, {int((got.templates == 0).sum())} timing none, {int(got.templates.sum())} templates")
