"""Judge the rule "Verify's reading of a heavy ATen GEMM: which step" (reports/device/rules.md)
on lm_head.py's records of a `--protocols` run: per GEMM whose verify pick is ATen, verify's
reading R (inside its decision) against its protocol read again and with one step dropped each
(lm_head.read_protocols), beside the compiled function's verify_idle block C.

    python reports/2026-12-07-verify-readings-lm-head-h100/protocols.py RUN_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPEATS = 0.03  # a reading repeats within 3 %
DROPPED_STEP = 0.05  # dropping a step matters when the read moves >= 5 % toward the compiled function
VARIANTS = ("aten_alone_no_warm", "aten_alone_no_idle")
STEP = {"aten_alone_no_warm": "the duty-cycled warm-up", "aten_alone_no_idle": "the idle after each read"}


def verdict(r: float, c: float, p: dict) -> str:
    """The rule's reading for one GEMM: R verify's reading, C the compiled function's, p the
    protocol reads' ATen medians by name."""
    again = p.get("set_again")
    if again is None:
        return "no protocol reads: nothing judged"
    if abs(again / r - 1) > REPEATS:
        return (
            f"(a) not met: the set read again gives {again:.4f} against R {r:.4f}; the reading does not repeat "
            "in the process, so no step is named (next: each round logged with the card's clocks)"
        )
    alone = p["aten_alone"]
    if abs(alone / again - 1) > REPEATS:
        return f"(b) the step is the interleaving with the kept templates: ATen alone reads {alone:.4f} against {again:.4f} in the set"
    named = [STEP[v] for v in VARIANTS if v in p and p[v] >= alone * (1 + DROPPED_STEP)]
    if named:
        return f"(c) the step is {' and '.join(named)}: dropping it moves ATen's read toward the compiled function's {c:.4f}"
    return f"(c) neither dropped step moves the read: the step is verify's short rounds themselves (read length), C {c:.4f}"


def main(run_dir: str) -> int:
    records = [json.loads(line) for line in (Path(run_dir) / "results.jsonl").read_text().splitlines() if line]
    by_m: dict = {}
    for r in records:
        if "way" in r:
            by_m.setdefault(r["M"], []).append(r)
    print(
        "| M | verify's pick | R: verify's reading | C: compiled, verify_idle | set again | ATen alone | no warm-up | no idle | verdict |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m, rows in sorted(by_m.items()):
        reading = next((r for r in rows if r["way"] == "verify_reading"), None)
        compiled = next((r for r in rows if r["function"] == "verify" and r["way"] == "verify_idle"), None)
        if reading is None or compiled is None or not str(reading.get("chosen", "")).startswith("aten"):
            continue
        p = {
            r["way"]: r["ms"]
            for r in rows
            if r["function"] == "verify_protocol" and str(r.get("choice", "")).startswith("aten")
        }
        cells = [f"{p[k]:.4f}" if k in p else "-" for k in ("set_again", "aten_alone", *VARIANTS)]
        print(
            f"| {m} | {reading['chosen']} | {reading['ms']:.4f} | {compiled['ms']:.4f} | "
            + " | ".join(cells)
            + f" | {verdict(reading['ms'], compiled['ms'], p)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
