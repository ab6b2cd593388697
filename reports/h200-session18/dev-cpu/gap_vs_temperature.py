"""Does the GPU's temperature before the timed steps explain verify's 8-layer prefill gap?

Least squares over every 8-layer prefill process that recorded `device_state` (sixteenth to
eighteenth sessions): the GPU-only (and eager) step on one indicator per run (host, round
structure), one per variant (predict is the baseline), with and without the temperature
read before the steps. If a warmer start explains verify's gap, its coefficient shrinks
once the temperature is in.

Run from the repo root: .venv/bin/python reports/h200-session18/dev-cpu/gap_vs_temperature.py
"""
import json
from pathlib import Path

import numpy as np

FILES = ["reports/h200-session16/call2/b/prefill8", "reports/h200-session16/call4/d/prefill8",
         "reports/h200-session17/call1/a/prefill8", "reports/h200-session17/call4/d/prefill8vp",
         "reports/h200-session18/call1/a/prefill8vp", "reports/h200-session18/call2/b/prefill8m0",
         "reports/h200-session18/call4/d/prefill8m0b"]
BASELINE = "kselect-predict"


def processes():
    rows = []
    for i, f in enumerate(FILES):
        for r in json.loads((Path(f) / "results.json").read_text())["runs"]:
            before = (r.get("device_state") or {}).get("before_steps") or {}
            if r.get("status") == "ok" and "temperature_c" in before and r.get("graph_step_ms") is not None:
                rows.append({"run": i, "variant": r["variant"], "temp": before["temperature_c"],
                             "gpu": r["graph_step_ms"], "step": r["step_ms"]})
    return rows


def fit(rows, outcome, with_temp):
    variants = sorted({r["variant"] for r in rows} - {BASELINE})
    names = [f"run{i}" for i in range(len(FILES))] + variants + (["temp_c"] if with_temp else [])
    X = np.array([[float(r["run"] == i) for i in range(len(FILES))] + [float(r["variant"] == v) for v in variants]
                  + ([r["temp"]] if with_temp else []) for r in rows])
    y = np.array([r[outcome] for r in rows])
    beta, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    se = np.sqrt(np.diag(resid @ resid / (len(y) - rank) * np.linalg.pinv(X.T @ X)))
    return {n: (round(float(b), 3), round(float(e), 3)) for n, b, e in zip(names, beta, se) if not n.startswith("run")}


if __name__ == "__main__":
    rows = processes()
    print(f"{len(rows)} processes in {len(FILES)} runs; ms over {BASELINE} (coefficient, standard error)")
    for outcome in ("gpu", "step"):
        print(f"{outcome:4s} without temperature: {fit(rows, outcome, False)}")
        print(f"{outcome:4s} with temperature:    {fit(rows, outcome, True)}")
