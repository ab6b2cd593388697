"""The runs `bench e2e-pool` reads: every process of the given results.json files, each with
the setup it pools under (GPU, model, workload, dtype, batch, sequence and the bench settings
that matter)."""

from __future__ import annotations

import json

from kselect.training.bench.common import run_settings
from kselect.training.bench.pooling import PoolError, read_results

# bench settings that change what a variant does or how it is timed: runs differing in any
# of them are different experiments (absent in an older results.json: None)
SETTINGS_THAT_MATTER = (
    "autotune",
    "freezing",
    "kselect_space",
    "k",
    "adaptive_k",
    "min_k",
    "aten_margin",
    "compile_budget",
    "early_decision",
    "warm_start",
    "warm_pool",
    "steps",
    "warmup",
    "warmup_s",
)
# a setting added later, as the runs made before it existed had it (they pool with its value then)
SETTINGS_BEFORE_THEY_EXISTED = {"warmup_s": 0.0, "compile_budget": 0.0, "warm_start": False}


def load_runs(paths) -> tuple[list[dict], list[str]]:
    """Every run of the given results.json files, each with its setup and source attached;
    and a line per file left out (--profile-compile)."""
    runs, skipped = [], []
    for given in paths:
        path, text = read_results(given, "results.json")
        try:
            report = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PoolError(f"{path}: not JSON ({exc})") from None
        if (
            not isinstance(report, dict)
            or not isinstance(report.get("runs"), list)
            or not isinstance(report.get("settings"), dict)
        ):
            raise PoolError(f"{path}: not a `kselect bench e2e` results.json (no 'settings' and 'runs')")
        settings = run_settings(report["settings"])
        if settings.get("profile_compile"):
            skipped.append(f"{path}: --profile-compile (cProfile slows the compile)")
            continue
        env = report.get("env") or {}
        gpu = env.get("gpu_name") or settings.get("device")
        code = env.get("kselect_code") or "not recorded"  # training/measure/provenance.py
        fixed = tuple((k, settings.get(k, SETTINGS_BEFORE_THEY_EXISTED.get(k))) for k in SETTINGS_THAT_MATTER)
        for position, r in enumerate(report["runs"]):  # bench e2e lists runs in the order they ran
            if not isinstance(r, dict) or not {"workload", "variant", "model", "status"} <= set(r):
                raise PoolError(f"{path}: a run without workload/variant/model/status")
            setup = {
                "gpu": gpu,
                "model": r["model"],
                "workload": r["workload"],
                "dtype": r.get("dtype", settings.get("dtype")),
                "batch": r.get("batch", settings.get("batch")),
                "seq": r.get("seq", settings.get("seq")),
                "settings": dict(fixed),
            }
            runs.append({**r, "source": str(path), "setup": setup, "code": code, "position": position})
    return runs, skipped
