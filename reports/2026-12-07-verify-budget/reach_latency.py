"""What the reach model adds to a verify decision on this CPU: the H200 ranker's `rank` against
`rank_with_reach` over the exhaustive space of 4096-wide GEMMs, median of 30 after a warm call,
with the ranker's own phase timings of the last call (featurize, trees, reach_trees).

    python reports/2026-12-07-verify-budget/reach_latency.py
"""

import json
import statistics
import time
from pathlib import Path

from kselect.kernels.candidate import Candidate
from kselect.kernels.problem import Problem
from kselect.kernels.triton.space import triton_space
from kselect.selector.config import SelectorSettings
from kselect.selector.inductor.device_rankers import DeviceRankers

REPO = Path(__file__).resolve().parents[2]


def median_ms(fn, n: int = 30) -> float:
    fn()
    laps = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        laps.append(time.perf_counter() - t)
    return 1e3 * statistics.median(laps)


if __name__ == "__main__":
    fp = json.loads((REPO / "data" / "h200-bf16" / "fingerprint.json").read_text())
    settings = SelectorSettings.from_keywords(mode="verify", compile_budget=0)
    ranker = DeviceRankers(settings).ranker_for(dict(fp, device_type="cuda"))
    for m in (16, 512, 4096):
        problem = Problem(m, 4096, 4096, "bf16", "nt")
        candidates = [Candidate.make("aten", "mm")] + triton_space(problem, "exhaustive")
        alone = median_ms(lambda: ranker.rank(problem, candidates, probe=False))
        both = median_ms(lambda: ranker.rank_with_reach(problem, candidates))
        phases = {k: round(v, 2) for k, v in ranker.last_phases_ms().items()}
        print(f"M={m}: {len(candidates)} candidates, rank {alone:.2f} ms, with reach {both:.2f} ms, phases {phases}")
