"""Judge step 1 of reports/device/rules.md's rule "E. The GEMM with its epilogue" on the JSONs
tests/selector/test_gpu_fused_forms.py writes to $KSELECT_EPILOGUE_OUT (fused-<kind>.json):
`time_fused` may become verify's default for activation epilogues only if, on both cases, the
fused readings were taken, the pick cached, the recompile measured nothing, `recompiled_step_ms`
and `step_ms` are each <= 1.02 x the pinned path's step, and `seconds` <= the pinned side's.

    python reports/2026-12-07-gpu-suite-h100/judge_fused.py DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STEP_TOLERANCE = 1.02


def verdict(case: dict) -> list[str]:
    """The rule's clauses this case misses (empty: it meets them all)."""
    fused, pinned = case["fused"], case["pinned"]
    best = pinned["step_ms"]
    missed = []
    if not any(m.get("fused_ms") for m in fused["measurements"]):
        missed.append("no fused reading")
    if not fused["picks"]:
        missed.append("pick not cached")
    if fused["recompile_measured"]:
        missed.append(f"the recompile measured {fused['recompile_measured']}")
    for field in ("recompiled_step_ms", "step_ms"):
        if fused[field] > STEP_TOLERANCE * best:
            missed.append(f"{field} {fused[field]:.4f} > {STEP_TOLERANCE} x pinned {best:.4f} ({pinned['pick']})")
    if fused["seconds"] > pinned["seconds"]:
        missed.append(f"seconds {fused['seconds']:.2f} > pinned {pinned['seconds']:.2f}")
    return missed


def main(folder: str) -> int:
    cases = sorted(Path(folder).glob("fused-*.json"))
    if not cases:
        print(f"no fused-*.json in {folder}")
        return 2
    met = True
    for path in cases:
        missed = verdict(json.loads(path.read_text()))
        met &= not missed
        print(f"{path.stem}: {'meets the rule' if not missed else '; '.join(missed)}")
    print("step 1:", "met" if met else "not met: time_fused stays off by default")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
