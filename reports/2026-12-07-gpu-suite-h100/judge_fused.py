"""Judge step 1 of reports/device/rules.md's rule "E. The GEMM with its epilogue" on the JSONs
tests/selector/test_gpu_fused_forms.py writes to $KSELECT_EPILOGUE_OUT (fused-<kind>.json):
`time_fused` may become verify's default for activation epilogues only if, on both cases, the
fused readings were taken, the pick cached, the recompile measured nothing, `recompiled_step_ms`
and `step_ms` are each <= 1.02 x the pinned path's step, and `seconds` <= the pinned side's.

As amended (the rule's amendment of 2026-12-07): where a JSON carries each side's GPU time
alone (`gpu_ms`, `recompiled_gpu_ms`, pinned's `gpu_ms`), the two step clauses are judged on
those, and the host steps are reported beside (a host step over 1.02 x pinned's with the GPU
times within is named: the compiled function's wrapper, not the pick). A case the reach budget
left to ATen alone (`few` of one ATen choice) has nothing for time_fused to decide: it is judged
on nothing measured, its times against pinned's and its seconds.

    python reports/2026-12-07-gpu-suite-h100/judge_fused.py DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STEP_TOLERANCE = 1.02


def _step_clauses(fused: dict, pinned: dict, gpu: bool) -> list[str]:
    """The two step clauses, on the GPU times alone (`gpu`) or on the host steps."""
    fields = ("recompiled_gpu_ms", "gpu_ms") if gpu else ("recompiled_step_ms", "step_ms")
    best, pick = (pinned["gpu_ms"], pinned.get("gpu_pick")) if gpu else (pinned["step_ms"], pinned["pick"])
    return [
        f"{field} {fused[field]:.4f} > {STEP_TOLERANCE} x pinned {best:.4f} ({pick})"
        for field in fields
        if fused[field] > STEP_TOLERANCE * best
    ]


def verdict(case: dict) -> tuple[list[str], list[str]]:
    """(The rule's clauses this case misses (empty: it meets them all), what is reported beside
    them: the host steps' clauses where the GPU times are judged)."""
    fused, pinned = case["fused"], case["pinned"]
    gpu = fused.get("gpu_ms") is not None and pinned.get("gpu_ms") is not None
    aten_alone = len(case.get("few", [])) == 1 and case["few"][0].startswith("aten:")
    missed = []
    if aten_alone:
        if fused["measurements"]:
            missed.append(f"ATen alone, yet {len(fused['measurements'])} measurement(s)")
    else:
        if not any(m.get("fused_ms") for m in fused["measurements"]):
            missed.append("no fused reading")
        if not fused["picks"]:
            missed.append("pick not cached")
    if fused["recompile_measured"]:
        missed.append(f"the recompile measured {fused['recompile_measured']}")
    missed += _step_clauses(fused, pinned, gpu)
    if fused["seconds"] > pinned["seconds"]:
        missed.append(f"seconds {fused['seconds']:.2f} > pinned {pinned['seconds']:.2f}")
    beside = [f"host: {m}" for m in _step_clauses(fused, pinned, False)] if gpu else []
    if gpu and beside and not _step_clauses(fused, pinned, True):
        beside.append("the GPU times within: the compiled function's wrapper, not the pick")
    return missed, beside


def main(folder: str) -> int:
    cases = sorted(Path(folder).glob("fused-*.json"))
    if not cases:
        print(f"no fused-*.json in {folder}")
        return 2
    met = True
    for path in cases:
        missed, beside = verdict(json.loads(path.read_text()))
        met &= not missed
        print(f"{path.stem}: {'meets the rule' if not missed else '; '.join(missed)}")
        for line in beside:
            print(f"  {line}")
    print("step 1:", "met" if met else "not met: time_fused stays off by default")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
