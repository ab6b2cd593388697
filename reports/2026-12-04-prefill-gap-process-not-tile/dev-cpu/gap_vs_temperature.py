"""Does the GPU's state (temperature before the steps, clock during the replays) explain
verify's 8-layer prefill gap?

Least squares over every 8-layer prefill process that recorded `device_state` (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k
to this report): the GPU-only (and eager) step on one indicator per run (host, round
structure), one per variant (predict is the baseline), with and without the temperature
read before the steps. If a warmer start explains verify's gap, its coefficient shrinks
once the temperature is in. The same for the SM clock sampled during the timed replays
(recorded since this report's runs only).

Run from the repo root: .venv/bin/python reports/2026-12-04-prefill-gap-process-not-tile/dev-cpu/gap_vs_temperature.py
"""
import json
from pathlib import Path

import numpy as np

FILES = ["reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call2/b/prefill8", "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call4/d/prefill8",
         "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call1/a/prefill8", "reports/2026-12-04-prefill-gap-lm-head-kernel-8-layer-decode/call4/d/prefill8vp",
         "reports/2026-12-04-prefill-gap-process-not-tile/call1/a/prefill8vp", "reports/2026-12-04-prefill-gap-process-not-tile/call2/b/prefill8m0",
         "reports/2026-12-04-prefill-gap-process-not-tile/call4/d/prefill8m0b"]
BASELINE = "kselect-predict"


def processes():
    rows = []
    for i, f in enumerate(FILES):
        for r in json.loads((Path(f) / "results.json").read_text())["runs"]:
            state = r.get("device_state") or {}
            before = state.get("before_steps") or {}
            if r.get("status") == "ok" and "temperature_c" in before and r.get("graph_step_ms") is not None:
                rows.append({"run": i, "variant": r["variant"], "temp": before["temperature_c"],
                             "clock": (state.get("during_replays") or {}).get("sm_clock_mhz"),
                             "gpu": r["graph_step_ms"], "step": r["step_ms"]})
    return rows


def fit(rows, outcome, covariate=None):
    variants = sorted({r["variant"] for r in rows} - {BASELINE})
    names = [f"run{i}" for i in range(len(FILES))] + variants + ([covariate] if covariate else [])
    X = np.array([[float(r["run"] == i) for i in range(len(FILES))] + [float(r["variant"] == v) for v in variants]
                  + ([r[covariate]] if covariate else []) for r in rows])
    y = np.array([r[outcome] for r in rows])
    beta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    se = np.sqrt(np.diag(resid @ resid / (len(y) - rank) * np.linalg.pinv(X.T @ X)))
    return {n: (round(float(b), 3), round(float(e), 3)) for n, b, e in zip(names, beta, se) if not n.startswith("run")}


if __name__ == "__main__":
    rows = processes()
    print(f"{len(rows)} processes in {len(FILES)} runs; ms over {BASELINE} (coefficient, standard error)")
    for outcome in ("gpu", "step"):
        print(f"{outcome:4s} without temperature: {fit(rows, outcome)}")
        print(f"{outcome:4s} with temperature:    {fit(rows, outcome, 'temp')}")
    sampled = [r for r in rows if r["clock"] is not None]
    runs = len({r["run"] for r in sampled})
    print(f"{len(sampled)} processes in {runs} runs with the clock sampled during the replays (MHz):")
    print(f"gpu  without the clock: {fit(sampled, 'gpu')}")
    print(f"gpu  with the clock:    {fit(sampled, 'gpu', 'clock')}")
