"""`kselect bench e2e`: a Llama-style decoder's training step, prefill and decode under
plain torch.compile, stock max-autotune (DEFAULT, EXHAUSTIVE) and kselect (verify, predict).

    kselect bench e2e --device cuda --model llama3-8b-1l --batch 8 --seq 1024 \\
        --exhaustive-model llama3-8b-1l-v32k --exhaustive-workloads decode --max-minutes 8.5

This module is the supervisor (training/cli/bench_e2e.py its command line). Every (variant, workload) runs in a fresh
worker process (e2e_worker.py, `python -m kselect.training.bench.e2e_worker SPEC`) with new, empty
TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR: a cold compile,
as a user's first one, with Inductor's caches on (so a GEMM repeated in another layer is tuned
once, as in any real compile). A worker that raises, dies or overruns the budget is reported
with its error; the others go on. results.json, README.md and compile_vs_step.png
(e2e_report.py) are rewritten after every run, so an interrupted bench still leaves what it
measured. What a variant is, and the targets: e2e_spec.py.

Per run: compile wall time (the first call, compile included, synchronised), the eager first
call for reference, the steady-state step (median of --steps synchronised calls after --warmup),
tokens/s, GEMMs autotuned and candidates benchmarked (Inductor's feedback saver; a GEMM served
from the autotune cache is counted as a cache hit, not as benchmarked), the kernel each
autotuned variant used per GEMM, the step's kernel time by kind (GEMM, attention, Inductor's
kernels, memory; training/bench/kernel_time.py), and the result against eager (train: loss and all gradients
of step 1; prefill/decode: last-position logits) as a relative-norm error; for bf16/fp16 an
fp32 copy of the model also runs, and a result beyond the tolerance passes only if it is no
further from fp32 than eager is (x3, PyTorch's accuracy rule for half dtypes): a deep graph
drifts from eager by rounding alone. No variant uses CUDA graphs, so all compare like for like; the max-autotune
variants tune GEMMs only (`max_autotune_gemm`) unless `--autotune full`. The train step is the
compiled forward + cross-entropy loss with its compiled backward, then an eager AdamW step
(fused on CUDA), all inside the timed step.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kselect.training.bench.common import cold_cache_env
from kselect.training.bench.e2e_report import safely, write_report
from kselect.training.bench.e2e_spec import (
    DEFAULT_VARIANTS,
    DEVICE_DEFAULTS,
    FAULT_ENV,
    ORDER,
    TOLERANCE,
    VARIANTS,
    WATCHDOG_GRACE_S,
    WORKLOADS,
)
from kselect.training.bench.e2e_tables import anchor_note
from kselect.training.bench.run_order import alternating_rounds


class BenchError(ValueError):
    """Bad `kselect bench e2e` arguments; the message names the problem."""


# ---------------------------------------------------------------------------------------
# settings
def _csv(text: str, allowed, what: str) -> list[str]:
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad:
        raise BenchError(f"unknown {what} {', '.join(map(repr, bad))}; known: {', '.join(allowed)}")
    if not items:
        raise BenchError(f"no {what} given")
    return list(dict.fromkeys(items))


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def bench_settings(
    *,
    policy: dict,
    device: str | None = None,
    model: str | None = None,
    dtype: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    steps: int = 20,
    warmup: int = 3,
    warmup_s: float | None = None,
    profile_steps: int = 5,
    kselect_space: str = "exhaustive",
    kselect_model: str = "",
    freezing: bool = False,
    seed: int = 0,
    autotune: str = "gemm",
    workloads: str | None = None,
    variants: str = ",".join(DEFAULT_VARIANTS),
    max_minutes: float = 60.0,
    repeats: int = 1,
    profile_compile: bool = False,
    warm_pool: bool = True,
    exhaustive_model: str | None = None,
    exhaustive_workloads: str | None = None,
    rtol: float | None = None,
) -> dict:
    """Validated, defaulted settings (everything a worker needs, and the report prints).
    None takes the device's default (e2e_spec.DEVICE_DEFAULTS); `workloads`, `variants` and
    `exhaustive_workloads` are comma-separated; `policy`: kselect's run settings
    (training/bench/common.py policy_settings)."""
    from kselect.training.bench.real_models import check_model, default_workloads

    device = device or _default_device()
    d = DEVICE_DEFAULTS[device]
    pick = lambda given, key: d[key] if given is None else given
    s = {
        "device": device,
        "model": pick(model, "model"),
        "dtype": pick(dtype, "dtype"),
        "batch": pick(batch, "batch"),
        "seq": pick(seq, "seq"),
        "steps": steps,
        "warmup": warmup,
        "warmup_s": pick(warmup_s, "warmup_s"),
        "profile_steps": profile_steps,
        **policy,
        "kselect_space": kselect_space.upper(),
        "kselect_model": kselect_model,
        "freezing": bool(freezing),
        "seed": seed,
        "autotune": autotune,
        "workloads": _csv(workloads or default_workloads(pick(model, "model")), WORKLOADS, "workload"),
        "variants": _csv(variants, ORDER, "variant"),
        "max_minutes": max_minutes,
        "repeats": repeats,
        "profile_compile": bool(profile_compile),
        "warm_pool": bool(warm_pool),
    }
    s["exhaustive_model"] = exhaustive_model or s["model"]
    s["exhaustive_workloads"] = (
        _csv(exhaustive_workloads, WORKLOADS, "workload") if exhaustive_workloads else s["workloads"]
    )
    s["rtol"] = rtol if rtol is not None else TOLERANCE[s["dtype"]]
    if not s["aten_margin"] >= 0:
        raise BenchError(f"--aten-margin must be >= 0, got {s['aten_margin']}")
    if not s["compile_budget"] >= 0:
        raise BenchError(f"--compile-budget must be >= 0, got {s['compile_budget']}")
    for name in ("batch", "seq", "steps", "k", "min_k"):
        if s[name] < 1:
            raise BenchError(f"--{name.replace('_', '-')} must be >= 1, got {s[name]}")
    if s["repeats"] < 1:
        raise BenchError(f"--repeats must be >= 1, got {s['repeats']}")
    if not (s["warmup"] >= 0 and s["warmup_s"] >= 0 and s["max_minutes"] >= 0 and s["profile_steps"] >= 0):
        raise BenchError("--warmup, --warmup-s, --profile-steps and --max-minutes must be >= 0")
    for name, workloads in ((s["model"], s["workloads"]), (s["exhaustive_model"], s["exhaustive_workloads"])):
        try:
            check_model(name, workloads, s["seq"])
        except ValueError as exc:
            raise BenchError(str(exc)) from exc
    if s["kselect_model"] and not Path(s["kselect_model"]).exists():
        raise BenchError(f"--kselect-model {s['kselect_model']} does not exist")
    return s


def plan(settings: dict) -> list[dict]:
    """The runs in order: per workload plain, default, kselect-verify, kselect-predict, that
    round `repeats` times (interleaved, so drift hits every variant alike; every other round
    reversed, so a process's position in its round does not favour one variant:
    training/bench/run_order.py); then every exhaustive run, once (the slowest, so a tight budget
    skips those first)."""
    variants = [v for v in ORDER if v in settings["variants"] and v != "exhaustive"]
    runs = []
    for w in settings["workloads"]:
        runs += [
            {"variant": v, "workload": w, "model": settings["model"], "repeat": r}
            for r, v in alternating_rounds(variants, settings.get("repeats", 1))
        ]
    if "exhaustive" in settings["variants"]:
        runs += [
            {"variant": "exhaustive", "workload": w, "model": settings["exhaustive_model"]}
            for w in settings["exhaustive_workloads"]
        ]
    return runs


def device_slug(device: str) -> str:
    """Folder tag of the device: 'NVIDIA H200' -> 'h200', cpu -> 'cpu'."""
    if device == "cpu":
        return "cpu"
    from kselect.training.measure.hardware_record import _nvidia_smi

    name = _nvidia_smi("name") or "cuda"
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in ("nvidia", "amd", "tesla")]
    return words[0] if words else "cuda"


# ---------------------------------------------------------------------------------------
# supervisor
def bench(settings: dict, out: Path, say=print, command: str = "", progress=None) -> dict:
    """Run the plan, one cold worker per run, rewriting the report after each. `say` hears a
    line per run; `progress` ("bench e2e runs", done, total) after each."""
    runs = plan(settings)
    t0 = time.monotonic()
    deadline = t0 + settings["max_minutes"] * 60
    report = {
        "command": command,
        "settings": settings,
        "env": {},
        "runs": [],
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "logs").mkdir(exist_ok=True)
    say(
        f"kselect bench e2e: {len(runs)} runs on {settings['device']} ({settings['model']}, "
        f"{settings['dtype']}, batch {settings['batch']}, seq {settings['seq']}), budget "
        f"{settings['max_minutes']:g} min -> {out}"
    )
    if "exhaustive" in settings["variants"] and settings["exhaustive_model"] != settings["model"]:
        say(f"  note: exhaustive runs use the smaller model {settings['exhaustive_model']}")
    for i, spec in enumerate(runs, 1):
        tag = f"[{i:2d}/{len(runs)}] {spec['workload']:<7} {spec['variant']:<15}"
        left = deadline - time.monotonic()
        if left <= 0:
            res = {
                **spec,
                "status": "skipped",
                "error": f"budget of {settings['max_minutes']:g} min spent before it could start",
            }
        else:
            say(f"{tag} starting ({_minutes(time.monotonic() - t0)} elapsed, {_minutes(left)} left)")
            try:
                res = run_one({**settings, **spec}, out / "logs", left)
            except Exception as exc:  # noqa: BLE001 -- e.g. no process could be started
                res = {**spec, "status": "error", "error": f"could not run the worker: {type(exc).__name__}: {exc}"}
        res.setdefault("repeat", spec.get("repeat", 0))
        report["runs"].append(res)
        report["env"] = report["env"] or res.get("env", {})
        report["elapsed_s"] = round(time.monotonic() - t0, 1)
        say(f"{tag} {safely(describe, res)}")
        write_report(report, out)
        if progress:
            progress("bench e2e runs", i, len(runs))
    say(f"done in {_minutes(time.monotonic() - t0)}; wrote {out}/results.json, README.md, compile_vs_step.png")
    return report


def failed_runs(report: dict) -> list[dict]:
    """The runs that neither finished well nor were skipped by the budget: errors, deaths,
    overruns and wrong results."""
    return [
        r
        for r in report["runs"]
        if r["status"] not in ("ok", "skipped") or (r.get("correctness") or {}).get("ok") is False
    ]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def describe(r: dict) -> str:
    """One progress line for a finished run."""
    if r["status"] == "skipped":
        return f"skipped: {r.get('error')}"
    parts = []
    if r.get("compile_s") is not None:
        parts.append(f"compile {r['compile_s']:.1f} s")
    if r.get("step_ms") is not None:
        parts.append(f"step {r['step_ms']:.2f} ms, {r['tokens_per_s']:,.0f} tok/s")
    g = r.get("gemms") or {}
    if g:
        tuning = (r.get("gemm_tuning") or {}).get("total_s")
        parts.append(
            f"{g['benchmarked']} GEMMs benchmarked ({g['candidates']} candidates, "
            f"{g['cache_hits']} cache hits" + (f", {tuning:.1f} s tuning)" if tuning else ")")
        )
    c = r.get("correctness") or {}
    if c:
        parts.append(
            f"{'correct' if c['ok'] else 'WRONG'} (rel err {c['rel_err']:.1e}, tol {c['tol']:.0e})" + anchor_note(c)
        )
    if r["status"] != "ok":
        parts.append(f"{r['status'].upper()}: {r.get('error', '')}"[:300])
    return "; ".join(parts) or r["status"]


def worker_env(spec: dict, tmp: Path) -> dict:
    """The worker's environment: cold caches, and for a model whose users enable kselect by
    KSELECT_MODE alone (torchtitan), the kselect variant's settings as KSELECT_* variables."""
    from kselect.training.bench.e2e_worker import enable_keywords
    from kselect.training.bench.real_models import selector_env

    env = cold_cache_env(tmp, keep=(FAULT_ENV,))
    if VARIANTS[spec["variant"]].kselect:
        env.update(selector_env(spec, enable_keywords(spec)))
    return env


def run_one(spec: dict, log_dir: Path, timeout_s: float) -> dict:
    """One worker process; its result dict, or what is known when it failed or overran."""
    tmp = Path(tempfile.mkdtemp(prefix="kselect-e2e-"))
    result_path = tmp / "result.json"
    # The worker also stops itself a little after the deadline: nothing outlives the bench.
    rep = f"-r{spec['repeat']}" if spec.get("repeat") else ""
    log_path = log_dir / f"{spec['workload']}-{spec['variant']}{rep}.log"
    spec = {
        **spec,
        "result_path": str(result_path),
        "tmp": str(tmp),
        "log_path": str(log_path),
        "deadline_epoch": time.time() + timeout_s + WATCHDOG_GRACE_S,
    }
    (tmp / "spec.json").write_text(json.dumps(spec))
    t0 = time.monotonic()
    status, error = "ok", ""
    try:
        with open(log_path, "w") as logf:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kselect.training.bench.e2e_worker", str(tmp / "spec.json")],
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=worker_env(spec, tmp),
                **_own_process_group(),
            )
            pid = proc.pid
            try:
                rc = proc.wait(timeout=max(timeout_s, 1.0))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                status, error = "timeout", f"stopped at the budget's deadline after {time.monotonic() - t0:.0f} s"
            except BaseException:
                _kill_group(proc)
                raise
        res = _read_json(result_path) or {}
        if status == "ok" and rc != 0 and res.get("status") != "error":
            status, error = "died", f"worker died with exit code {rc}: {_tail(log_path)}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    keep = {k: spec[k] for k in ("variant", "workload", "model")}
    res = {**res, **keep, "wall_s": round(time.monotonic() - t0, 1), "log": str(log_path), "pid": pid}
    res["gemm_tuning"] = autotune_log_times(log_path)
    res.pop("result_path", None)
    if status != "ok":
        res.update(status=status, error=error)
    elif res.get("status") not in ("ok", "error"):
        res.update(status="died", error=f"worker exited {rc} without a result: {_tail(log_path)}")
    return res


_AUTOTUNE_LINE = re.compile(r"AUTOTUNE benchmarking takes ([0-9.]+) seconds and ([0-9.]+) seconds precompiling")


def autotune_log_times(log_path: Path) -> dict | None:
    """Seconds Inductor reports spending on GEMM autotuning (its 'AUTOTUNE benchmarking takes
    B seconds and P seconds precompiling' line, printed once per GEMM it really benchmarks)."""
    try:
        found = _AUTOTUNE_LINE.findall(Path(log_path).read_text(errors="replace"))
    except OSError:
        return None
    bench, pre = sum(float(b) for b, _ in found), sum(float(p) for _, p in found)
    return {
        "gemms": len(found),
        "benchmark_s": round(bench, 2),
        "precompile_s": round(pre, 2),
        "total_s": round(bench + pre, 2),
    }


def _own_process_group() -> dict:
    """Popen arguments giving the worker its own process group (so it and its compile workers
    can be stopped together) but not its own OS process session (so whatever ends the bench ends it too)."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover - Python 3.10


def _kill_group(proc) -> None:
    """Stop the worker and the compile processes it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-800:]


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
