"""kselect's own share of a compile of an op it leaves, on the CPU: cProfile over one cold
max-autotune compile of an fp32 mm (stock's choices on this CPU), every function under this
repository's folders listed by cumulative seconds.

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python reports/2026-12-07-never-widen-h100/cpu_profile.py predict|verify|stock
"""

import cProfile
import pstats
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def main(mode: str) -> None:
    if mode != "stock":
        from kselect.selector import enable

        enable(mode)
    a, b = torch.randn(256, 512), torch.randn(512, 384)
    compiled = torch.compile(lambda a, b: torch.mm(a, b), mode="max-autotune-no-cudagraphs")
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    compiled(a, b)
    profile.disable()
    print(mode, "compile s", round(time.perf_counter() - t0, 2))
    stats = pstats.Stats(profile).stats
    rows = [(k, v) for k, v in stats.items() if str(REPO) in k[0] and ".venv" not in k[0]]
    rows.sort(key=lambda kv: -kv[1][3])
    for (fn, line, name), (_, calls, _, cumulative, _) in rows[:15]:
        print(f"{cumulative:8.3f} {calls:6d} {fn.split(str(REPO) + '/')[-1]}:{line} {name}")


if __name__ == "__main__":
    main(sys.argv[1])
