"""`kselect bench e2e`: a Llama-style decoder's training step, prefill and decode under
plain torch.compile, stock max-autotune (DEFAULT, EXHAUSTIVE) and kselect (verify, predict).

    kselect bench e2e --device cuda --model llama3-8b-1l --batch 8 --seq 1024 \\
        --exhaustive-model llama3-8b-1l-v32k --exhaustive-workloads decode --max-minutes 8.5

Every (variant, workload) runs in a fresh worker process (`python -m kselect.training.bench_e2e
--worker SPEC`) with new, empty TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR: a cold compile,
as a user's first one, with Inductor's caches on (so a GEMM repeated in another layer is tuned
once, as in any real compile). A worker that raises, dies or overruns the budget is reported
with its error; the others go on. results.json, README.md and compile_vs_step.png are rewritten
after every run, so an interrupted bench still leaves what it measured.

Per run: compile wall time (the first call, compile included, synchronised), the eager first
call for reference, the steady-state step (median of --steps synchronised calls after --warmup),
tokens/s, GEMMs autotuned and candidates benchmarked (Inductor's feedback saver; a GEMM served
from the autotune cache is counted as a cache hit, not as benchmarked), the kernel each
autotuned variant used per GEMM, the step's kernel time by kind (GEMM, attention, Inductor's
kernels, memory; training/kernel_time.py), and the result against eager (train: loss and all gradients
of step 1; prefill/decode: last-position logits) as a relative-norm error; for bf16/fp16 an
fp32 copy of the model also runs, and a result beyond the tolerance passes only if it is no
further from fp32 than eager is (x3, PyTorch's accuracy rule for half dtypes): a deep graph
drifts from eager by rounding alone. No variant uses CUDA graphs, so all compare like for like; the max-autotune
variants tune GEMMs only (`max_autotune_gemm`) unless `--autotune full`. The train step is the
compiled forward + cross-entropy loss with its compiled backward, then an eager AdamW step
(fused on CUDA), all inside the timed step.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from kselect.kernels.operands import relative_error
from kselect.selector.policy import ATEN_MARGIN_SD

from .bench_common import GemmCounter, add_policy_args, cold_cache_env
from .kernel_time import KINDS
from .kernel_time import combine as combine_kernel_time
from .kernel_time import differences as kernel_differences

log = logging.getLogger(__name__)

WORKLOADS = ("train", "prefill", "decode")
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "fp32": 1e-4}   # relative-norm error vs eager
# bf16/fp16: a result further than the tolerance from eager's is still correct when it is no
# further from an fp32 run of the same weights and inputs than REF_MULTIPLIER x eager's own
# error (+ tol/10): a deeper graph drifts from eager by rounding alone (plain torch.compile of
# 8 Llama-3-8B layers: 2.2e-2, eleventh session). The rule and the 3 are PyTorch's own
# accuracy check's for half dtypes (torch._dynamo.utils.same, against an fp64 reference).
REF_MULTIPLIER = 3.0
VERIFY_COMPILE_VS_PLAIN = 1.25
PREDICT_COMPILE_VS_PLAIN = 1.05
MAX_AUTOTUNE = "max-autotune-no-cudagraphs"
FAULT_ENV = "KSELECT_BENCH_E2E_FAULT"   # test hook, see _maybe_fault
WATCHDOG_GRACE_S = 10.0


class BenchError(ValueError):
    """Bad `kselect bench e2e` arguments; the message names the problem."""


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str | None          # torch.compile mode
    space: str | None         # max_autotune_gemm_search_space; "kselect" = --kselect-space
    kselect: str | None       # selector mode
    help: str
    options: tuple = ()       # extra kselect.selector.enable() keywords, as (name, value) pairs
    backends: str | None = None  # max_autotune_gemm_backends (None: Inductor's default)


VARIANTS = {v.name: v for v in (
    Variant("plain", None, None, None, "torch.compile(fn): ATen GEMMs, nothing autotuned"),
    Variant("default", MAX_AUTOTUNE, "DEFAULT", None, "stock max-autotune, DEFAULT search space"),
    Variant("exhaustive", MAX_AUTOTUNE, "EXHAUSTIVE", None, "stock max-autotune, EXHAUSTIVE search space"),
    Variant("kselect-verify", MAX_AUTOTUNE, "kselect", "verify",
            "max-autotune + kselect verify: Inductor benchmarks the model's adaptive top-k + ATen"),
    Variant("kselect-verify-epilogue", MAX_AUTOTUNE, "kselect", "verify",
            "kselect verify with epilogue_fusion=True: also keeps a template that can fuse the GEMM's "
            "pointwise epilogue and charges ATen the separate kernel (selector/fusion.py)",
            (("epilogue_fusion", True),)),
    Variant("kselect-predict", MAX_AUTOTUNE, "kselect", "predict",
            "max-autotune + kselect predict: the model's top-1, nothing benchmarked"),
    Variant("autotune-aten", MAX_AUTOTUNE, None, None,
            "stock max-autotune offered ATen alone (max_autotune_gemm_backends=ATEN): one choice per "
            "GEMM, nothing benchmarked -- what max-autotune's GEMM path costs a compile by itself, "
            "the floor under kselect's compile time", backends="ATEN"),
)}
# Run order inside a workload, baseline first; plan() puts every exhaustive run last.
ORDER = ("plain", "default", "kselect-verify", "kselect-verify-epilogue", "kselect-predict", "autotune-aten",
         "exhaustive")
# what runs unless --variants says otherwise (the epilogue and ATen-only variants are opt-in
# experiments)
DEFAULT_VARIANTS = tuple(v for v in ORDER if v not in ("kselect-verify-epilogue", "autotune-aten"))

# Defaults by device: the H200 run vs the CPU test (tiny fp32 model).
DEVICE_DEFAULTS = {"cuda": {"model": "llama3-8b-1l", "dtype": "bf16", "batch": 8, "seq": 1024},
                   "cpu": {"model": "tiny", "dtype": "fp32", "batch": 2, "seq": 32}}


# ---------------------------------------------------------------------------------------
# command line
def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "e2e", help="Llama-style training step, prefill and decode under each variant",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="model preset (training/llama.py PRESETS: llama3-8b-2l, llama3-8b-1l, "
                   "llama3-8b-1l-v32k, tiny, or llama3-8b-<N>l for N of the 32 layers; default "
                   "llama3-8b-1l on cuda, tiny on cpu)")
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on cuda, fp32 on cpu")
    p.add_argument("--device", choices=("cuda", "cpu"), help="default cuda when available")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset of "
                   f"{','.join(WORKLOADS)}")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help=f"comma-separated subset of {','.join(ORDER)} (default: all but the epilogue experiment)")
    p.add_argument("--batch", type=int, help="sequences per step (decode: M = batch); default 8 cuda, 2 cpu")
    p.add_argument("--seq", type=int, help="train sequence and prompt length; default 1024 cuda, 32 cpu")
    p.add_argument("--steps", type=int, default=20, help="timed steady-state steps (median; default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps after the first call (default 3)")
    p.add_argument("--profile-steps", type=int, default=5, help="steps run under torch.profiler after "
                   "the timing, for the step's kernel time by kind (GEMM, attention, Inductor, memory, "
                   "other); 0 = none (default 5)")
    add_policy_args(p)
    p.add_argument("--kselect-space", choices=("exhaustive", "default"), default="exhaustive",
                   help="search space kselect ranks (default exhaustive: it prunes before code "
                   "generation, so the whole space costs only ranking time)")
    p.add_argument("--autotune", choices=("gemm", "full"), default="gemm",
                   help="what the max-autotune variants tune: gemm = GEMM choices only (Inductor's "
                   "max_autotune_gemm; default: compile-time differences are GEMM selection alone), "
                   "full = mode max-autotune-no-cudagraphs, which adds coordinate-descent tuning of "
                   "every pointwise/reduction kernel to every max-autotune variant, kselect ones too")
    p.add_argument("--kselect-model", default="", help="cost-model booster (default: the shipped one)")
    p.add_argument("--exhaustive-model", help="model preset for the exhaustive variant (default --model)")
    p.add_argument("--exhaustive-workloads", help="workloads of the exhaustive variant (default --workloads)")
    p.add_argument("--freezing", action="store_true", help="prefill/decode: inductor freezing (weights "
                   "as constants) in every variant")
    p.add_argument("--rtol", type=float, help="relative-norm tolerance vs eager (default bf16 2e-2, "
                   "fp16 1e-2, fp32 1e-4)")
    p.add_argument("--profile-compile", action="store_true",
                   help="run each compile under cProfile: logs/<workload>-<variant>.prof (pstats) and "
                   ".prof.txt (the 60 largest cumulative entries); profiling inflates compile s")
    p.add_argument("--cold-pool", action="store_true",
                   help="do not wait for Inductor's compile-worker pool before the timed compile (it "
                   "then starts racing the compile, as in a script's first torch.compile; by default "
                   "every variant waits for it first and the wait is reported apart: `compile_pool_s` in results.json)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=1, help="processes per (workload, variant), interleaved; "
                   "the report gives the median and range over them (between-process noise on the H200 "
                   "reached 5-48 %% of a step, reports/e2e-h200/samples.md); exhaustive runs once")
    p.add_argument("--max-minutes", type=float, default=60.0, help="budget: runs that would start "
                   "later are skipped (and reported); a running one is stopped at the deadline")
    p.add_argument("--out", help="report directory (default reports/e2e-<device>, e.g. e2e-h200)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout (progress to stderr)")
    p.set_defaults(func=run)


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


def settings_from_args(args) -> dict:
    """Validated, defaulted settings (everything a worker needs, and the report prints)."""
    from .llama import preset

    device = args.device or _default_device()
    d = DEVICE_DEFAULTS[device]
    pick = (lambda given, key: d[key] if given is None else given)
    s = {"device": device, "model": pick(args.model, "model"), "dtype": pick(args.dtype, "dtype"),
         "batch": pick(args.batch, "batch"), "seq": pick(args.seq, "seq"), "steps": args.steps,
         "warmup": args.warmup, "profile_steps": getattr(args, "profile_steps", 5), "k": args.k,
         "fixed_k": bool(getattr(args, "fixed_k", False)),
         "min_k": getattr(args, "min_k", 1),
         "aten_margin": getattr(args, "aten_margin", ATEN_MARGIN_SD),
         "early_decision": not getattr(args, "late_decision", False),
         "kselect_space": args.kselect_space.upper(),
         "kselect_model": args.kselect_model, "freezing": bool(args.freezing), "seed": args.seed,
         "autotune": getattr(args, "autotune", "gemm"),
         "workloads": _csv(args.workloads, WORKLOADS, "workload"),
         "variants": _csv(args.variants, ORDER, "variant"), "max_minutes": args.max_minutes,
         "repeats": getattr(args, "repeats", 1),
         "profile_compile": bool(getattr(args, "profile_compile", False)),
         "warm_pool": not getattr(args, "cold_pool", False)}
    s["exhaustive_model"] = args.exhaustive_model or s["model"]
    s["exhaustive_workloads"] = (_csv(args.exhaustive_workloads, WORKLOADS, "workload")
                                 if args.exhaustive_workloads else s["workloads"])
    s["rtol"] = args.rtol if args.rtol is not None else TOLERANCE[s["dtype"]]
    if not s["aten_margin"] >= 0:
        raise BenchError(f"--aten-margin must be >= 0, got {s['aten_margin']}")
    for name in ("batch", "seq", "steps", "k", "min_k"):
        if s[name] < 1:
            raise BenchError(f"--{name.replace('_', '-')} must be >= 1, got {s[name]}")
    if s["repeats"] < 1:
        raise BenchError(f"--repeats must be >= 1, got {s['repeats']}")
    if s["warmup"] < 0 or s["max_minutes"] < 0 or s["profile_steps"] < 0:
        raise BenchError("--warmup, --profile-steps and --max-minutes must be >= 0")
    for name in {s["model"], s["exhaustive_model"]}:
        cfg = preset(name)
        if s["seq"] + 1 > cfg.max_positions:
            raise BenchError(f"--seq {s['seq']} (+1 decode position) exceeds {name}'s "
                             f"max_positions {cfg.max_positions}")
    if s["kselect_model"] and not Path(s["kselect_model"]).exists():
        raise BenchError(f"--kselect-model {s['kselect_model']} does not exist")
    return s


def plan(settings: dict) -> list[dict]:
    """The runs in order: per workload plain, default, kselect-verify, kselect-predict, that
    round `repeats` times (interleaved, so drift hits every variant alike); then every
    exhaustive run, once (the slowest, so a tight budget skips those first)."""
    runs = []
    for w in settings["workloads"]:
        for r in range(settings.get("repeats", 1)):
            runs += [{"variant": v, "workload": w, "model": settings["model"], "repeat": r}
                     for v in ORDER if v in settings["variants"] and v != "exhaustive"]
    if "exhaustive" in settings["variants"]:
        runs += [{"variant": "exhaustive", "workload": w, "model": settings["exhaustive_model"]}
                 for w in settings["exhaustive_workloads"]]
    return runs


def device_slug(device: str) -> str:
    """Folder tag of the device: 'NVIDIA H200' -> 'h200', cpu -> 'cpu'."""
    if device == "cpu":
        return "cpu"
    from .fingerprint import _nvidia_smi

    name = _nvidia_smi("name") or "cuda"
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in ("nvidia", "amd", "tesla")]
    return words[0] if words else "cuda"


def run(args) -> int:
    settings = settings_from_args(args)
    out = Path(args.out or f"reports/e2e-{device_slug(settings['device'])}")
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if args.json else (lambda m: print(m, flush=True))
    argv = getattr(args, "argv", None)  # set by the kselect CLI; sys.argv otherwise
    command = "kselect " + shlex.join(argv) if argv else \
        "kselect bench e2e " + shlex.join(_argv_after("e2e"))
    report = bench(settings, out, say, command)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    bad = [r for r in report["runs"] if r["status"] not in ("ok", "skipped")
           or (r.get("correctness") or {}).get("ok") is False]
    return 1 if bad else 0


def _argv_after(word: str) -> list[str]:
    argv = sys.argv[1:]
    return argv[argv.index(word) + 1:] if word in argv else argv


# ---------------------------------------------------------------------------------------
# supervisor
def bench(settings: dict, out: Path, say=print, command: str = "") -> dict:
    """Run the plan, one cold worker per run, rewriting the report after each."""
    runs = plan(settings)
    t0 = time.monotonic()
    deadline = t0 + settings["max_minutes"] * 60
    report = {"command": command, "settings": settings, "env": {}, "runs": [],
              "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "logs").mkdir(exist_ok=True)
    say(f"kselect bench e2e: {len(runs)} runs on {settings['device']} ({settings['model']}, "
        f"{settings['dtype']}, batch {settings['batch']}, seq {settings['seq']}), budget "
        f"{settings['max_minutes']:g} min -> {out}")
    if "exhaustive" in settings["variants"] and settings["exhaustive_model"] != settings["model"]:
        say(f"  note: exhaustive runs use the smaller model {settings['exhaustive_model']}")
    for i, spec in enumerate(runs, 1):
        tag = f"[{i:2d}/{len(runs)}] {spec['workload']:<7} {spec['variant']:<15}"
        left = deadline - time.monotonic()
        if left <= 0:
            res = {**spec, "status": "skipped",
                   "error": f"budget of {settings['max_minutes']:g} min spent before it could start"}
        else:
            say(f"{tag} starting ({_minutes(time.monotonic() - t0)} elapsed, {_minutes(left)} left)")
            try:
                res = run_one({**settings, **spec}, out / "logs", left)
            except Exception as exc:  # noqa: BLE001 -- e.g. no process could be started
                res = {**spec, "status": "error",
                       "error": f"could not run the worker: {type(exc).__name__}: {exc}"}
        res.setdefault("repeat", spec.get("repeat", 0))
        report["runs"].append(res)
        report["env"] = report["env"] or res.get("env", {})
        report["elapsed_s"] = round(time.monotonic() - t0, 1)
        say(f"{tag} {_safe(describe, res)}")
        write_report(report, out)
    say(f"done in {_minutes(time.monotonic() - t0)}; wrote {out}/results.json, README.md, compile_vs_step.png")
    return report


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
        parts.append(f"{g['benchmarked']} GEMMs benchmarked ({g['candidates']} candidates, "
                     f"{g['cache_hits']} cache hits" + (f", {tuning:.1f} s tuning)" if tuning else ")"))
    c = r.get("correctness") or {}
    if c:
        parts.append(f"{'correct' if c['ok'] else 'WRONG'} (rel err {c['rel_err']:.1e}, tol {c['tol']:.0e})"
                     + _anchor_note(c))
    if r["status"] != "ok":
        parts.append(f"{r['status'].upper()}: {r.get('error', '')}"[:300])
    return "; ".join(parts) or r["status"]


def _policy_note(settings: dict) -> str:
    """", min_k=N" / ", aten_margin=X" / ", late decision" when the run set them away from the defaults."""
    n, m = settings.get("min_k", 1), settings.get("aten_margin", ATEN_MARGIN_SD)
    return ((f", min_k={n}" if n != 1 else "") + (f", aten_margin={m:g}" if m != ATEN_MARGIN_SD else "")
            + ("" if settings.get("early_decision", True) else ", late decision"))


def run_one(spec: dict, log_dir: Path, timeout_s: float) -> dict:
    """One worker process; its result dict, or what is known when it failed or overran."""
    tmp = Path(tempfile.mkdtemp(prefix="kselect-e2e-"))
    result_path = tmp / "result.json"
    # The worker also stops itself a little after the deadline: nothing outlives the bench.
    rep = f"-r{spec['repeat']}" if spec.get("repeat") else ""
    log_path = log_dir / f"{spec['workload']}-{spec['variant']}{rep}.log"
    spec = {**spec, "result_path": str(result_path), "tmp": str(tmp), "log_path": str(log_path),
            "deadline_epoch": time.time() + timeout_s + WATCHDOG_GRACE_S}
    (tmp / "spec.json").write_text(json.dumps(spec))
    t0 = time.monotonic()
    status, error = "ok", ""
    try:
        with open(log_path, "w") as logf:
            proc = subprocess.Popen([sys.executable, "-m", "kselect.training.bench_e2e", "--worker",
                                     str(tmp / "spec.json")], stdout=logf, stderr=subprocess.STDOUT,
                                    env=cold_cache_env(tmp, keep=(FAULT_ENV,)), **_own_process_group())
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
    return {"gemms": len(found), "benchmark_s": round(bench, 2), "precompile_s": round(pre, 2),
            "total_s": round(bench + pre, 2)}


def _own_process_group() -> dict:
    """Popen arguments giving the worker its own process group (so it and its compile workers
    can be stopped together) but not its own session (so whatever ends the bench ends it too)."""
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


def _write_json(path: Path, obj) -> None:
    """Atomic: a reader (or a kill) never sees half a file."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str) + "\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------
# worker: one (variant, workload) in this process
def worker_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    res = {k: spec[k] for k in ("variant", "workload", "model", "device", "dtype", "batch", "seq")}
    res["status"] = "running"

    def save():
        _write_json(Path(spec["result_path"]), res)

    _watchdog(spec.get("deadline_epoch"))
    try:
        _maybe_fault(spec, "start")
        measure(spec, res, save)
        res["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 -- reported to the supervisor, never lost
        res.update(status="error", error=f"{type(exc).__name__}: {exc}"[:2000],
                   traceback=traceback.format_exc()[-6000:])
        traceback.print_exc()
    save()
    try:
        from kselect.selector import inductor as ksi
        ksi.disable()  # flushes kselect's queued decision-cache writes; os._exit skips atexit
    except Exception:  # noqa: BLE001 -- the result is saved already
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown (the compile-worker pool's shutdown takes seconds).
    os._exit(0 if res["status"] == "ok" else 1)


def _watchdog(deadline_epoch) -> None:
    """Kill this worker's process group past the deadline, should the supervisor be gone."""
    if not deadline_epoch:
        return
    import threading

    def fire():
        time.sleep(max(0.0, deadline_epoch - time.time()))
        print("worker watchdog: past the bench's deadline, stopping", flush=True)
        try:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        finally:
            os._exit(124)

    threading.Thread(target=fire, name="deadline-watchdog", daemon=True).start()


def _maybe_fault(spec: dict, phase: str) -> None:
    """Test hook: KSELECT_BENCH_E2E_FAULT="variant/workload/phase/raise|exit[,...]" fails the
    matching run at `phase` (start, compile, end): an exception, or exit 137 as if killed."""
    for want in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        variant, workload, at, how = (want.split("/") + ["", "", "", ""])[:4]
        if (variant, workload, at) != (spec["variant"], spec["workload"], phase):
            continue
        if how == "exit":
            print(f"fault injected: exit 137 at {phase}", flush=True)
            os._exit(137)
        raise RuntimeError(f"fault injected at {phase}")


def configure(spec: dict):
    """Inductor settings and the kselect plug-in of this variant; returns compile(fn)."""
    import torch
    from torch._inductor import config

    v = VARIANTS[spec["variant"]]
    if spec["workload"] != "train" and spec.get("freezing"):
        config.freezing = True
    if v.space and v.space != "kselect":
        config.max_autotune_gemm_search_space = v.space
    if v.backends:
        config.max_autotune_gemm_backends = v.backends
    if v.kselect:
        from kselect.selector import inductor as ksi

        # As a user runs it: DEFAULT configured; enable() widens to the space kselect ranks and
        # narrows a GEMM it cannot rank back to DEFAULT.
        config.max_autotune_gemm_search_space = "DEFAULT"
        ksi.enable(v.kselect, k=spec["k"], model=spec.get("kselect_model") or None,
                   adaptive_k=not spec.get("fixed_k", False), min_k=spec.get("min_k", 1),
                   aten_margin=spec.get("aten_margin", ATEN_MARGIN_SD),
                   early_decision=spec.get("early_decision", True),
                   cache_dir=str(Path(spec["tmp"]) / "kselect-cache"), search_space=spec["kselect_space"],
                   **dict(v.options))
    kwargs = {}
    if v.mode and spec.get("autotune", "gemm") == "gemm":
        config.max_autotune_gemm = True     # GEMM autotuning alone: no pointwise tuning, no graphs
    elif v.mode:
        kwargs["mode"] = v.mode
    return lambda fn: torch.compile(fn, **kwargs)


class SelectorLog(logging.Handler):
    """kselect's own log: decisions (candidates seen, kept, ms) and fallback warnings."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = self.kept = self.decisions = 0
        self.ms = 0.0
        self.warnings: list[str] = []
        self.threads: dict[str, int] = {}   # decisions per thread (backward compiles may run elsewhere)

    def emit(self, record):
        try:
            if str(record.msg).startswith("kselect %s %s: %d candidates seen") and len(record.args) >= 6:
                self.decisions += 1
                self.seen += int(record.args[2])
                self.kept += int(record.args[3])
                self.ms += float(record.args[5])
                self.threads[record.threadName] = self.threads.get(record.threadName, 0) + 1
            elif record.levelno >= logging.WARNING and record.getMessage() not in self.warnings:
                self.warnings.append(record.getMessage())
        except Exception:  # noqa: BLE001 -- a log format change must not fail the bench
            pass

    def summary(self, selector) -> dict:
        out = {"decisions_logged": self.decisions, "candidates_ranked": self.seen, "kept": self.kept,
               "ranking_ms": round(self.ms, 1), "threads": self.threads, "warnings": self.warnings[:10]}
        if selector is not None:
            out["stats"] = dict(selector.stats)
            out.update(selector_picks(selector))
        return out


def selector_picks(selector) -> dict:
    """What kselect finally handed Inductor per GEMM (the later stage and a verify measurement
    override the earlier), counted by template, plus its own measurements and CPU time."""
    final: dict = {}
    for d in selector.decisions:
        final[d["problem"]] = d["kept"]
    measured = list(selector.measurements)
    for m in measured:
        final[m["problem"]] = [m["winner"]]
    by_template: dict = {}
    for kept in final.values():
        name = ":".join(kept[0].split(":")[:2]) if len(kept) == 1 else "set-of-%d" % len(kept)
        by_template[name] = by_template.get(name, 0) + 1
    return {"picks": final, "picks_by_template": by_template,
            "decision_cpu_ms": round(sum(d.get("cpu_ms", 0.0) for d in selector.decisions), 1),
            "early_decisions": sum(1 for d in selector.decisions if d.get("early")),
            "measurements": [{k: m[k] for k in ("problem", "ms", "winner", "wall_ms", "compiled_in", "phases_ms",
                                                 "epilogue_saving_ms", "bare_winner") if k in m} for m in measured]}


def measure(spec: dict, res: dict, save) -> None:
    """Build the model, run the eager reference, compile, check, time; fill `res` as it goes."""
    t_start = time.monotonic()
    import torch

    from .llama import build, preset

    compile_fn = configure(spec)
    res["env"] = environment(spec["device"])
    counter, sel_log = instrument(spec)
    device = torch.device(spec["device"])
    if sel_log is not None:  # one-time model load, kept out of compile_s and reported apart
        t0 = time.perf_counter()
        res["kselect_ranker"] = ranker_preflight(device)
        res["kselect_load_s"] = round(time.perf_counter() - t0, 3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[spec["dtype"]]
    cfg = preset(spec["model"])
    res["model_note"] = cfg.note
    res["params"] = cfg.n_params()
    if device.type == "cuda":
        from kselect.kernels.timing import warm_gpu

        torch.cuda.reset_peak_memory_stats()
        warm_gpu()
    if spec.get("warm_pool", True):  # the pool's start must not race the timed compile
        from kselect.selector.inductor_compat import warm_compile_pool

        pool_s = warm_compile_pool()
        res["compile_pool_s"] = None if pool_s is None else round(pool_s, 2)
    model = build(cfg, device, dtype, spec["seed"])
    res["setup_s"] = round(time.monotonic() - t_start, 2)
    try:
        _maybe_fault(spec, "compile")
        WORKLOAD_FNS[spec["workload"]](model, spec, res, save, compile_fn)
    finally:  # what autotuning did, also when the run failed
        res["gemms"] = counter.summary()
        if sel_log is not None:
            from kselect.selector import inductor as ksi

            sel = ksi.current()
            res["kselect"] = sel_log.summary(sel)
            if sel is not None and sel.measurements:   # verify timing its kept sets itself
                res["gemms"]["kselect_measured"] = len(sel.measurements)
                res["gemms"]["benchmarked"] += len(sel.measurements)
                res["gemms"]["candidates"] += sel.stats["measured"]
        res["graphs"] = _graph_count()
        if device.type == "cuda":
            res["peak_memory_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    _maybe_fault(spec, "end")


def instrument(spec: dict):
    """Our feedback saver (GEMMs and candidates benchmarked) and, for kselect variants, a
    handler on kselect's log (decisions, ranking time, fallback warnings)."""
    from kselect.selector import inductor_compat as compat

    counter = GemmCounter()
    compat.add_feedback_saver(counter)
    if not VARIANTS[spec["variant"]].kselect:
        return counter, None
    sel_log = SelectorLog()
    logging.getLogger("kselect.selector").addHandler(sel_log)
    logging.getLogger("kselect.selector").setLevel(logging.INFO)
    return counter, sel_log


def ranker_preflight(device) -> str:
    """Load kselect's ranker before compiling. On a GPU a ranker that cannot load (no model for
    this GPU, xgboost missing) would make this run measure stock Inductor under kselect's
    name: fail it at once instead. On the CPU no model exists by design (kselect falls back to
    stock, one warning): say so and go on."""
    from kselect.selector import inductor as ksi
    from kselect.selector import inductor_compat as compat

    try:
        ranker = ksi.current().ranker_for(compat.device_fingerprint(device))
        return str(getattr(ranker, "ident", type(ranker).__name__))
    except Exception as exc:  # noqa: BLE001 -- RankerUnavailable, ImportError, ModelError...
        if device.type == "cuda":
            raise RuntimeError(f"kselect cannot rank on this GPU, so this run would measure stock "
                               f"Inductor: {type(exc).__name__}: {exc}") from exc
        return f"unavailable ({type(exc).__name__}: {exc})"


def _graph_count():
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001
        return None


def environment(device: str) -> dict:
    from .fingerprint import collect_fingerprint

    fp = collect_fingerprint()
    keep = ("gpu_name", "sm_count", "compute_capability", "torch_version", "triton_version",
            "cuda_version", "hip_version", "driver_version", "python_version", "host")
    env = {k: fp.get(k) for k in keep if fp.get(k) is not None}
    env["device"] = device
    env["cpus"] = os.cpu_count()
    return env


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_call(fn, device):
    """(result, wall seconds) of one synchronised call."""
    _sync(device)
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - t0


def steady_state(fn, device, steps: int, warmup: int) -> dict:
    """Median (and spread) of `steps` synchronised calls after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = [timed_call(fn, device)[1] * 1e3 for _ in range(steps)]
    s = sorted(times)
    q = statistics.quantiles(s, n=10, method="inclusive") if len(s) >= 2 else [s[0]] * 9
    return {"step_ms": statistics.median(s), "step_ms_min": s[0], "step_ms_p10": q[0],
            "step_ms_p90": q[-1], "steps": steps, "warmup": warmup}


def graph_replay_ms(fn, device, replays: int = 20) -> dict | None:
    """The step's GPU time alone: `fn` captured once in a CUDA graph, replayed `replays` times.

    Why: decode steps are launch-bound (no CUDA graphs in any variant), so a step time mixes
    kernel time with the host's launch overhead; a variant with fewer, fused kernels can win
    on the host side only. Measured after the step timing, on CUDA; a step that cannot be
    captured records why instead (None on the CPU)."""
    import torch

    if device.type != "cuda":
        return None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return {"graph_step_ms": statistics.median(times), "graph_replays": replays}
    except Exception as exc:  # noqa: BLE001 -- an extra measurement; the row keeps its step time
        return {"graph_error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _profile_kernels(res: dict, save, fn, device, spec: dict) -> None:
    """The step's kernel time by kind (training/kernel_time.py), after the timing: an extra
    measurement, so a failure is recorded in the row and the run stays ok."""
    n = spec.get("profile_steps", 0)
    if n < 1:
        return
    from .kernel_time import profile_kernels

    try:
        res["kernel_time"] = profile_kernels(fn, device, steps=n)
    except Exception as exc:  # noqa: BLE001
        res["kernel_time"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    save()


def _tokens(spec, vocab: int, length: int, device, offset: int = 0):
    import torch

    gen = torch.Generator().manual_seed(spec["seed"] + 1000 + offset)
    return torch.randint(0, vocab, (spec["batch"], length), generator=gen).to(device)


def _record(res, save, timing: dict, tokens_per_step: int) -> None:
    res.update(timing)
    res["tokens_per_s"] = tokens_per_step / (timing["step_ms"] / 1e3)
    save()


def fp32_copy(model):
    """An fp32 copy of a half-precision model (the same, rounded, weights), else None."""
    import copy

    import torch

    if model.embed.weight.dtype not in (torch.bfloat16, torch.float16):
        return None
    return copy.deepcopy(model).float()


def judge(err_vs_eager: float, tol: float, err_vs_ref: float | None = None,
          eager_err_vs_ref: float | None = None) -> dict:
    """The correctness verdict: within `tol` of eager, or (half dtypes, with an fp32 reference)
    no further from the reference than REF_MULTIPLIER x eager's own error + tol/10."""
    out = {"rel_err": err_vs_eager, "tol": tol, "ok": err_vs_eager <= tol}
    if err_vs_ref is not None and eager_err_vs_ref is not None:
        bound = REF_MULTIPLIER * eager_err_vs_ref + tol / 10
        out.update({"rel_err_vs_fp32": err_vs_ref, "eager_rel_err_vs_fp32": eager_err_vs_ref,
                    "fp32_bound": bound, "ok": out["ok"] or err_vs_ref <= bound})
    return out


def _anchor_note(c: dict) -> str:
    """How a result beyond the tolerance vs eager was judged (the fp32 anchor), else ''."""
    if "rel_err_vs_fp32" not in c or c["rel_err"] <= c["tol"]:
        return ""
    return (f" (vs fp32 {c['rel_err_vs_fp32']:.1e}, eager's {c['eager_rel_err_vs_fp32']:.1e}, "
            f"bound {c['fp32_bound']:.1e})")


def _return_gpu_memory() -> None:
    """Give the fp32 reference's freed blocks back, so the timed steps run as without it."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _global_rel_err(got: list, want: list) -> float:
    num = sum(float((g.float() - w.float()).norm() ** 2) for g, w in zip(got, want))
    den = sum(float(w.float().norm() ** 2) for w in want)
    return math.sqrt(num / max(den, 1e-60))


def run_train(model, spec, res, save, compile_fn) -> None:
    """Compiled forward + loss (+ its compiled backward), eager AdamW; checked on step 1."""
    import torch
    import torch.nn.functional as F

    device = model.embed.weight.device
    tokens = _tokens(spec, model.cfg.vocab, spec["seq"], device)
    targets = _tokens(spec, model.cfg.vocab, spec["seq"], device, offset=1)

    def loss_of(m):
        return lambda t, y: F.cross_entropy(m(t).flatten(0, 1).float(), y.flatten())

    loss_fn = loss_of(model)

    params = list(model.parameters())

    def eager_grads():
        loss = loss_fn(tokens, targets)
        loss.backward()
        return loss.detach()

    loss_e, res["eager_first_s"] = timed_call(eager_grads, device)
    grads_e = [p.grad.detach().clone() for p in params]
    for p in params:
        p.grad = None
    ref = None   # (loss, grads) of an fp32 copy: the anchor for half-precision drift
    model32 = fp32_copy(model)
    if model32 is not None:
        loss32 = loss_of(model32)(tokens, targets)
        loss32.backward()
        ref = (float(loss32.detach()), [p.grad.detach() for p in model32.parameters()])
        del model32, loss32
        _return_gpu_memory()
    opt = torch.optim.AdamW(params, lr=1e-5, **({"fused": True} if device.type == "cuda" else {}))
    compiled = compile_fn(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = compiled(tokens, targets)
        loss.backward()
        opt.step()
        return loss.detach()

    with compile_profile(spec):
        loss_c, first = timed_call(step, device)
    res["compile_s"] = round(first, 3)
    res["compile_phases"] = compile_phases()
    save()
    grads_c = [torch.zeros_like(g) if p.grad is None else p.grad for p, g in zip(params, grads_e)]
    grad_err = _global_rel_err(grads_c, grads_e)
    worst = max(relative_error(c, g) for c, g in zip(grads_c, grads_e))

    def loss_rel(a, b):
        return abs(float(a) - float(b)) / max(abs(float(b)), 1e-30)

    loss_err = loss_rel(loss_c, loss_e)
    vs_ref = eager_vs_ref = None
    if ref is not None:   # step 1's gradients (the optimizer has not touched them)
        vs_ref = max(loss_rel(loss_c, ref[0]), _global_rel_err(grads_c, ref[1]))
        eager_vs_ref = max(loss_rel(loss_e, ref[0]), _global_rel_err(grads_e, ref[1]))
    del grads_e, grads_c, ref
    _return_gpu_memory()
    res["correctness"] = {"what": "step-1 loss and gradients (global relative norm) vs eager",
                          **judge(max(loss_err, grad_err), spec["rtol"], vs_ref, eager_vs_ref),
                          "loss_rel_err": loss_err, "grad_rel_err": grad_err,
                          "grad_rel_err_worst_tensor": worst, "loss_eager": float(loss_e),
                          "loss_compiled": float(loss_c)}
    save()
    _record(res, save, steady_state(step, device, spec["steps"], spec["warmup"]), spec["batch"] * spec["seq"])
    _profile_kernels(res, save, step, device, spec)


@contextlib.contextmanager
def compile_profile(spec: dict):
    """--profile-compile: cProfile around the compiling call, saved beside the run's log as
    pstats (<log>.prof, for `python -m pstats`) and as text (<log>.prof.txt); else nothing."""
    if not spec.get("profile_compile") or not spec.get("log_path"):
        yield
        return
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        base = Path(spec["log_path"]).with_suffix("")
        prof.dump_stats(f"{base}.prof")
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(60)
        Path(f"{base}.prof.txt").write_text(text.getvalue())


def compile_phases(top: int = 30) -> dict:
    """Where compile_s went, by Inductor's own clock: seconds per phase it times so far in this
    process (torch._dynamo.utils.compilation_time_metrics, summed over calls; phases nest, e.g.
    GraphLowering.run -- lowering, GEMM choice generation and selection -- is inside
    compile_fx_inner), the `top` largest. {} when this torch does not keep them."""
    try:
        from torch._dynamo.utils import compilation_time_metrics
        total = {str(k): float(sum(v)) for k, v in compilation_time_metrics.items()}
    except Exception:  # noqa: BLE001 -- a private table: its absence must not fail the bench
        return {}
    return {k: round(v, 3) for k, v in sorted(total.items(), key=lambda kv: -kv[1])[:top]}


def _run_inference(model, spec, res, save, compile_fn, caches, tokens, pos: int, tokens_per_step: int):
    import torch

    device = model.embed.weight.device

    def fn(t, c):
        return model(t, c, pos, last_only=True)

    with torch.no_grad():
        ref, model32 = None, fp32_copy(model)
        if model32 is not None:   # an fp32 run on fp32 copies of the same caches
            caches32 = [(k.float(), v.float()) for k, v in caches]
            ref = model32(tokens, caches32, pos, last_only=True)
            del model32, caches32
            _return_gpu_memory()
        want, res["eager_first_s"] = timed_call(lambda: fn(tokens, caches), device)
        compiled = compile_fn(fn)
        with compile_profile(spec):
            got, first = timed_call(lambda: compiled(tokens, caches), device)
        res["compile_s"] = round(first, 3)
        res["compile_phases"] = compile_phases()
        anchored = (relative_error(got, ref), relative_error(want, ref)) if ref is not None else (None, None)
        res["correctness"] = {"what": "last-position logits vs eager (relative norm)",
                              **judge(relative_error(got, want), spec["rtol"], *anchored)}
        del ref
        save()
        timing = steady_state(lambda: compiled(tokens, caches), device, spec["steps"], spec["warmup"])
        _record(res, save, timing, tokens_per_step)
        graph = graph_replay_ms(lambda: compiled(tokens, caches), device)
        if graph:
            res.update(graph)
            save()
        _profile_kernels(res, save, lambda: compiled(tokens, caches), device, spec)


def run_prefill(model, spec, res, save, compile_fn) -> None:
    """Prompt of `seq` tokens into a static KV cache; logits of the last position."""
    caches = model.new_caches(spec["batch"], spec["seq"] + 1)
    prompt = _tokens(spec, model.cfg.vocab, spec["seq"], model.embed.weight.device)
    _run_inference(model, spec, res, save, compile_fn, caches, prompt, 0, spec["batch"] * spec["seq"])


def run_decode(model, spec, res, save, compile_fn) -> None:
    """One new token per sequence at position `seq`, attending over the prompt's cached keys.
    The prompt is prefilled eagerly (untimed); every timed step rewrites the same slot."""
    import torch

    device = model.embed.weight.device
    caches = model.new_caches(spec["batch"], spec["seq"] + 1)
    with torch.no_grad():
        model(_tokens(spec, model.cfg.vocab, spec["seq"], device), caches, 0, last_only=True)
    nxt = _tokens(spec, model.cfg.vocab, 1, device, offset=2)
    _run_inference(model, spec, res, save, compile_fn, caches, nxt, spec["seq"], spec["batch"])


WORKLOAD_FNS = {"train": run_train, "prefill": run_prefill, "decode": run_decode}


# ---------------------------------------------------------------------------------------
# report
def targets(runs: list[dict]) -> list[dict]:
    """The issue's targets per workload, against plain and DEFAULT runs of the same model."""
    ok = {(r["workload"], r["variant"]): r for r in runs if r.get("status") == "ok"}
    out = []
    for w in dict.fromkeys(r["workload"] for r in runs):
        plain, default = ok.get((w, "plain")), ok.get((w, "default"))
        verify_text = f"step <= default's and compile <= {VERIFY_COMPILE_VS_PLAIN}x plain's"
        for variant, text in (("kselect-verify", verify_text), ("kselect-verify-epilogue", verify_text),
                              ("kselect-predict", f"compile <= {PREDICT_COMPILE_VS_PLAIN}x plain's")):
            if not any(r["workload"] == w and r["variant"] == variant for r in runs):
                continue
            r = ok.get((w, variant))
            met, why = None, "not measured"
            if r and plain and (variant == "kselect-predict" or default):
                # a process's first compile also loads the cost model: counted here
                load = r.get("kselect_load_s") or 0.0
                c = (r["compile_s"] + load) / plain["compile_s"]
                loaded = f" (its {load:.2f} s model load included)" if load else ""
                if variant.startswith("kselect-verify"):
                    s = r["step_ms"] / default["step_ms"]
                    met = s <= 1.0 and c <= VERIFY_COMPILE_VS_PLAIN
                    why = f"step {s:.3f}x default, compile {c:.2f}x plain{loaded}"
                    same = same_kernels(r, default)
                    if same:
                        why += f"; DEFAULT's kernel on {same[0]} of {same[1]} GEMMs"
                    gemm_ms = gemm_kernel_ms(r), gemm_kernel_ms(default)
                    if None not in gemm_ms and gemm_ms[1] > 0:
                        why += (f"; GEMM kernels {gemm_ms[0] / gemm_ms[1]:.3f}x DEFAULT's "
                                f"({gemm_ms[0]:.3f} vs {gemm_ms[1]:.3f} ms per step)")
                else:
                    met = c <= PREDICT_COMPILE_VS_PLAIN
                    why = f"compile {c:.2f}x plain{loaded}"
                if r["correctness"]["ok"] is False:
                    met, why = False, why + "; result WRONG"
            out.append({"workload": w, "variant": variant, "target": text, "met": met, "detail": why})
    return out


def gemm_kernel_ms(r: dict) -> float | None:
    """A run's GEMM kernel time per step from its profile (kernel_time), else None."""
    return ((r.get("kernel_time") or {}).get("ms_per_step") or {}).get("gemm")


def kernel_time_table(runs: list[dict], workload: str) -> list[str]:
    """Per variant, the step's kernel time by kind (medians over repeats): the GEMM column is
    what GEMM selection controls; whole-step gaps between same-kernel runs are noise."""
    rows = sorted((r for r in runs if r["workload"] == workload and (r.get("kernel_time") or {}).get("ms_per_step")),
                  key=lambda r: ORDER.index(r["variant"]))
    if not rows:
        return []
    k = rows[0]["kernel_time"]
    lines = [f"Kernel time per step by kind, ms ({k['source']}, {k['steps']} steps after the timing; "
             "medians over repeats):", "", "| variant | " + " | ".join(KINDS) + " | total |",
             "| --- |" + " --- |" * (len(KINDS) + 1)]
    for r in rows:
        ms = r["kernel_time"]["ms_per_step"]
        lines.append(f"| {r['variant']} | " + " | ".join(_fmt(ms.get(c), ".3f") for c in (*KINDS, "total")) + " |")
    lines.append("")
    default = next((r for r in rows if r["variant"] == "default"), None)
    for r in rows:
        if default is None or not r["variant"].startswith("kselect-verify"):
            continue
        diff = kernel_differences(r["kernel_time"], default["kernel_time"])
        if diff:
            lines += [f"Kernels whose time differs most, {r['variant']} vs default (ms per step; the first "
                      "process of each):", "", f"| kind | kernel | {r['variant']} | default |",
                      "| --- | --- | --- | --- |"]
            lines += [f"| {kind} | `{name[:90]}` | {mine:.4f} | {theirs:.4f} |" for kind, name, mine, theirs in diff]
            lines.append("")
    return lines


def kernel_picks(r: dict) -> dict:
    """{GEMM problem key: the kernel this run used}: kselect's final pick, or for stock
    max-autotune the choice Inductor timed fastest; {} for plain (ATen throughout, not tuned)."""
    picks = {p: kept[0] for p, kept in ((r.get("kselect") or {}).get("picks") or {}).items() if len(kept) == 1}
    return picks or dict((r.get("gemms") or {}).get("winners") or {})


def same_kernels(r: dict, default: dict) -> tuple[int, int] | None:
    """(GEMMs where `r` used DEFAULT's kernel, GEMMs both report), or None when either has none:
    a step-time gap between runs of the same kernels is noise, not selection."""
    mine, theirs = kernel_picks(r), kernel_picks(default)
    both = [p for p in mine if p in theirs]
    return (sum(mine[p] == theirs[p] for p in both), len(both)) if both else None


def kernels_table(runs: list[dict], workload: str) -> list[str]:
    """Per GEMM, the kernel each autotuned variant used (the first process's, with repeats)."""
    rows = [r for r in runs if r["workload"] == workload and r.get("status") == "ok"]
    picks = {r["variant"]: kernel_picks(r) for r in sorted(rows, key=lambda r: ORDER.index(r["variant"]))}
    picks = {v: p for v, p in picks.items() if p}
    problems = list(dict.fromkeys(k for p in picks.values() for k in p))
    if not problems:
        return []
    lines = [f"Kernels per GEMM ({workload}; stock variants: the choice Inductor timed fastest; "
             "plain: ATen throughout):", "", "| GEMM | " + " | ".join(picks) + " |",
             "| --- |" + " --- |" * len(picks)]
    for prob in problems:
        lines.append(f"| {prob} | " + " | ".join(f"`{p[prob]}`" if prob in p else "-" for p in picks.values()) + " |")
    return lines + [""]


def _fmt(x, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


def table(runs: list[dict], workload: str) -> list[str]:
    rows = [r for r in runs if r["workload"] == workload]
    ok = {r["variant"]: r for r in rows if r.get("status") == "ok"}
    base_model = (ok.get("plain") or rows[0])["model"]
    lines = ["| variant | model | compile s | x plain compile | step ms (p10-p90) | x default step | "
             "GPU-only step ms (CUDA-graph replay) | tokens/s | GEMMs benchmarked (+cache hits) | "
             "candidates benchmarked | GEMM tuning s | vs eager | status |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: ORDER.index(r["variant"])):
        same = r["model"] == base_model
        plain, default = ok.get("plain"), ok.get("default")
        xc = r["compile_s"] / plain["compile_s"] if same and plain and r.get("compile_s") else None
        xs = r["step_ms"] / default["step_ms"] if same and default and r.get("step_ms") else None
        step = (f"{r['step_ms']:.3f} ({r['step_ms_p10']:.3f}-{r['step_ms_p90']:.3f})"
                if r.get("step_ms") is not None else "-")
        g = r.get("gemms") or {}
        c = r.get("correctness") or {}
        check = "-" if not c else f"{'ok' if c['ok'] else 'WRONG'} {c['rel_err']:.1e}" + _anchor_note(c)
        tuned = f"{g['benchmarked']} (+{g['cache_hits']})" if g else "-"
        tuning = _fmt((r.get("gemm_tuning") or {}).get("total_s"), ".1f")
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {str(r.get('error', ''))[:120]}"
        gpu_only = _fmt(r.get("graph_step_ms"), ".3f", "-" if not r.get("graph_error") else "capture failed")
        lines.append(f"| {r['variant']} | {r['model']} | {_fmt(r.get('compile_s'), '.1f')} | {_fmt(xc, '.2f')} | "
                     f"{step} | {_fmt(xs, '.3f')} | {gpu_only} | {_fmt(r.get('tokens_per_s'), ',.0f')} | "
                     f"{tuned} | {g.get('candidates', '-')} | {tuning} | "
                     f"{check} | {status.replace('|', '/')} |")
    return lines


def phase_table(runs: list[dict], workload: str, min_s: float = 0.1) -> list[str]:
    """Inductor's compile phases (seconds; medians over repeats) per variant: the phases taking
    >= min_s in some variant, largest first. Phases nest, so columns do not sum to compile s."""
    rows = sorted((r for r in runs if r["workload"] == workload and r.get("compile_phases")),
                  key=lambda r: ORDER.index(r["variant"]))
    if not rows:
        return []
    names = [k for k in dict.fromkeys(k for r in rows for k in r["compile_phases"])
             if max(r["compile_phases"].get(k, 0.0) for r in rows) >= min_s]
    names.sort(key=lambda k: -max(r["compile_phases"].get(k, 0.0) for r in rows))
    head = " | ".join(r["variant"] for r in rows)
    lines = [f"Compile phases, s (Inductor's `compilation_time_metrics`; nested, so they do not sum; "
             f">= {min_s:g} s somewhere):", "", f"| phase | {head} |",
             "| --- |" + " --- |" * len(rows)]
    for k in names:
        lines.append(f"| {k} | " + " | ".join(_fmt(r["compile_phases"].get(k), ".2f") for r in rows) + " |")
    return lines + [""]


def render(report: dict) -> str:
    s, env, runs = report["settings"], report.get("env", {}), report.get("combined") or report["runs"]
    device = (env.get("gpu_name") or "cuda") if s["device"] == "cuda" else f"CPU ({env.get('cpus', '?')} cores)"
    lines = [f"# End-to-end: Llama-style decoder under each compile variant ({device})", "",
             f"Command: `{report.get('command')}`", "",
             f"Started {report.get('started_at')}, {report.get('elapsed_s', 0) / 60:.1f} min; torch "
             f"{env.get('torch_version', '?')}, triton {env.get('triton_version', '?')}, CUDA "
             f"{env.get('cuda_version', '-')}, {env.get('cpus', '?')} CPU cores.", "",
             "## Setup", "",
             f"- model `{s['model']}` ({_model_note(s['model'])}), {s['dtype']}, random weights "
             f"(seed {s['seed']})",
             "- variants: " + "; ".join(f"`{v}` = {VARIANTS[v].help}" for v in ORDER if v in s["variants"]),
             f"- train: batch {s['batch']} x seq {s['seq']}; prefill: batch {s['batch']} x prompt {s['seq']} "
             f"(M = {s['batch'] * s['seq']}); decode: batch {s['batch']} (M = {s['batch']}), one token after "
             f"a {s['seq']}-token static KV cache",
             f"- steady state: median of {s['steps']} synchronised steps after {s['warmup']} warm-up steps"
             + ("" if s["steps"] >= 20 else " (**fewer than the 20 the issue asks for: a smoke run**)")
             + (f"; each variant in {s['repeats']} processes (interleaved): step and compile are the "
                f"medians over them, the step range in brackets is min-max of the per-process medians, "
                f"every sample in results.json (`combined[].step_ms_samples`)"
                if s.get("repeats", 1) > 1 else ""),
             "- compile s: wall time of the first call (compile + one step), synchronised; the eager "
             "first call is in results.json (`eager_first_s`); kselect's one-time cost-model load is "
             "not in it (below, `ranker load s`) but the Targets table adds it to the kselect variants' compile"
             + ("; every variant first waits for Inductor's compile-worker pool to be up, untimed "
                "(`compile_pool_s` in results.json): otherwise the pool's start races the compile, "
                "which then compiles kernels in-process until the workers are up, a between-process "
                "noise of up to +-30 % of a compile" if s.get("warm_pool", True) else
                "; `--cold-pool`: the compile-worker pool starts with the compile, as in a script's "
                "first torch.compile"),
             "- cold caches: every (variant, workload) in a fresh process with new, empty "
             "TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR (Inductor's caches on, as in a user's first "
             "compile: a GEMM shape repeated in another layer is tuned once)",
             ("- max-autotune variants = `torch.compile` with Inductor's `max_autotune_gemm` (GEMM "
              "autotuning only, `--autotune gemm`): compile-time differences are GEMM selection alone. "
              "The full mode also tunes every pointwise/reduction kernel (coordinate descent; on the "
              "H200 train step ~+70-115 s of compile in every max-autotune variant, kselect ones too, "
              "reports/e2e-h200/attempt-1)" if s.get("autotune", "gemm") == "gemm" else
              "- max-autotune variants = mode `max-autotune-no-cudagraphs` (`--autotune full`): they also "
              "tune every pointwise/reduction kernel (coordinate descent), kselect ones included"),
             "- no CUDA graphs in any variant (plain torch.compile uses none): like for like; prefill/decode "
             "also report the step's GPU time alone (the compiled step captured in a CUDA graph by the "
             "benchmark, median of 20 replays): step minus that is host launch overhead",
             *([f"- kernel time by kind: {s['profile_steps']} more steps under torch.profiler after the "
                "timing, each kernel's GPU time summed by kind (GEMM, attention, Inductor's generated "
                "kernels, memory, other); the GEMM column is the part GEMM selection controls, and "
                "identical kernels differ by ~1-2 % between processes (training/kernel_time.py)"]
               if s.get("profile_steps") else []),
             "- train step: compiled forward + cross-entropy (+ its compiled backward), eager AdamW "
             "(fused on CUDA), all timed; correctness = step-1 loss and gradients vs eager",
             f"- kselect: `kselect.selector.enable(mode, k={s['k']}"
             f"{', adaptive_k=False' if s.get('fixed_k') else ''}"
             f"{_policy_note(s)})` on top of max-autotune, search space "
             f"{s['kselect_space']} (kselect prunes Inductor's choices before code generation, so ranking "
             f"the whole space costs milliseconds), cost model "
             f"{s['kselect_model'] or 'shipped for this GPU'}, decision cache in the run's fresh temp dir",
             "- GEMMs benchmarked / candidates: Inductor's feedback saver (a GEMM whose choices come from the "
             "autotune cache, e.g. a repeated layer, is a cache hit); GEMM tuning s: benchmarking + "
             "precompiling seconds Inductor logs for those GEMMs (part of compile s)",
             *(["- **every compile ran under cProfile** (`--profile-compile`): compile s and its phases "
                "are inflated; the profiles are `logs/<workload>-<variant>.prof` (+ `.prof.txt`)"]
               if s.get("profile_compile") else []),
             f"- tolerance vs eager: relative-norm error <= {s['rtol']:g}; bf16/fp16 results "
             f"beyond it still pass when no further from an fp32 run of the same weights than "
             f"{REF_MULTIPLIER:g}x eager's own error + tol/10 (PyTorch's accuracy rule for half "
             f"dtypes: rounding alone makes a deep graph drift from eager)"
             + (", freezing on for prefill/decode" if s["freezing"] else ""), ""]
    if "exhaustive" in s["variants"] and s["exhaustive_model"] != s["model"]:
        lines += [f"**EXHAUSTIVE runs use the smaller model `{s['exhaustive_model']}` "
                  f"({_model_note(s['exhaustive_model'])}) on {', '.join(s['exhaustive_workloads'])}**: "
                  "their ratios to plain/default are left out.", ""]
    for w in dict.fromkeys(r["workload"] for r in runs):
        lines += ([f"## {w}", ""] + table(runs, w) + [""] + phase_table(runs, w) + kernels_table(runs, w)
                  + kernel_time_table(runs, w))
    tg = targets(runs)
    if tg:
        lines += ["## Targets", "", "| workload | variant | target | met | measured |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {t['workload']} | {t['variant']} | {t['target']} | "
                  f"{ {True: 'met', False: 'NOT met', None: 'n/a'}[t['met']]} | {t['detail']} |" for t in tg]
        lines.append("")
    ks = [r for r in report["runs"] if r.get("kselect")]
    if ks:
        lines += ["## kselect decisions", "", "Ranker: " + "; ".join(sorted({str(r.get("kselect_ranker"))
                                                                           for r in ks})), "",
                  "| workload | variant | ranker load s | decisions (per thread) | candidates ranked | kept | "
                  "ranking ms (CPU ms) | final picks | fallbacks | warnings |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in ks:
            k = r["kselect"]
            st = k.get("stats", {})
            threads = ", ".join(f"{t}: {n}" for t, n in k.get("threads", {}).items())
            lines.append(f"| {r['workload']} | {r['variant']} | {_fmt(r.get('kselect_load_s'), '.2f')} | "
                         f"{st.get('decisions', k['decisions_logged'])}"
                         f"{f' ({threads})' if threads else ''} | {k['candidates_ranked']} | {k['kept']} | "
                         f"{k['ranking_ms']} ({_fmt(k.get('decision_cpu_ms'), '.1f')}) | "
                         f"{', '.join(f'{t} {n}' for t, n in sorted(k.get('picks_by_template', {}).items())) or '-'}"
                         f" | {st.get('fallbacks', '-')} | "
                         f"{'; '.join(k['warnings'])[:300].replace('|', '/') or '-'} |")
        lines.append("")
    lines += ["![compile time vs step time](compile_vs_step.png)", ""]
    if report.get("plot_error"):
        lines += [f"(plot failed: {report['plot_error']})", ""]
    lines += ["Per-run logs: `logs/<workload>-<variant>.log` next to this file; every number above is in "
              "results.json.", ""]
    return "\n".join(lines)


def _model_note(name: str) -> str:
    from .llama import preset

    try:
        cfg = preset(name)
    except ValueError:
        return "?"
    return f"{cfg.note}; {cfg.n_params() / 1e9:.2f} B parameters" if cfg.n_params() > 1e8 else \
        f"{cfg.note}; {cfg.n_params():,} parameters"


def plot(runs: list[dict], path: Path) -> None:
    """One panel per workload: compile time (x) against step time (y), one marker per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r["workload"] for r in runs))
    markers = dict(zip(ORDER, "osDPv^"))
    fig, axes = plt.subplots(1, max(len(workloads), 1), figsize=(5 * max(len(workloads), 1), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        pts = [r for r in runs if r["workload"] == w and r.get("compile_s") is not None and r.get("step_ms")]
        for r in pts:
            ax.scatter(r["compile_s"], r["step_ms"], marker=markers[r["variant"]], s=60,
                       label=r["variant"] + ("" if r["status"] == "ok" else f" ({r['status']})"))
            ax.annotate(r["variant"], (r["compile_s"], r["step_ms"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
        xs = [r["compile_s"] for r in pts]
        if xs and max(xs) > 10 * min(xs):
            ax.set_xscale("log")
        ax.set_title(f"{w} ({pts[0]['model'] if pts else 'no data'})")
        ax.set_xlabel("compile wall time, s (first call)")
        ax.set_ylabel("step time, ms (median)")
        ax.grid(alpha=0.3)
        if pts:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _safe(fn, *args):
    """fn(*args), or a note of its failure: reporting must never end a bench that measured."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001
        log.warning("%s failed", getattr(fn, "__name__", fn), exc_info=True)
        return f"({getattr(fn, '__name__', 'report')} failed: {type(exc).__name__}: {exc})"


def combine_repeats(runs: list[dict]) -> list[dict]:
    """One row per (workload, variant, model): with several processes per variant, the median
    step and compile time over the ok ones, their range in step_ms_p10 / _p90 (min / max of the
    per-process medians) and every sample in *_samples. A single run passes through."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["workload"], r["variant"], r["model"]), []).append(r)
    out = []
    for rs in groups.values():
        ok = [r for r in rs if r.get("status") == "ok"]
        if len(rs) == 1 or not ok:
            out.append(rs[0])
            continue
        steps = [r["step_ms"] for r in ok]
        compiles = [r["compile_s"] for r in ok]
        row = dict(ok[0])
        row.update({"repeats": len(ok), "step_ms": statistics.median(steps),
                    "step_ms_p10": min(steps), "step_ms_p90": max(steps),
                    "compile_s": statistics.median(compiles), "step_ms_samples": steps,
                    "compile_s_samples": compiles,
                    "tokens_per_s": statistics.median(r["tokens_per_s"] for r in ok),
                    # the worst process's verdict and numbers (its fp32 anchor, if any, with them)
                    "correctness": {**max((r["correctness"] for r in ok), key=lambda c: c["rel_err"]),
                                    "ok": all(r["correctness"]["ok"] for r in ok)}})
        phases = [r["compile_phases"] for r in ok if r.get("compile_phases")]
        if phases:
            row["compile_phases"] = {k: statistics.median(p.get(k, 0.0) for p in phases)
                                     for k in dict.fromkeys(k for p in phases for k in p)}
        loads = [r["kselect_load_s"] for r in ok if r.get("kselect_load_s") is not None]
        if loads:
            row["kselect_load_s"] = statistics.median(loads)
        graphs = [r["graph_step_ms"] for r in ok if r.get("graph_step_ms") is not None]
        if graphs:
            row["graph_step_ms"], row["graph_step_ms_samples"] = statistics.median(graphs), graphs
        kernels = combine_kernel_time([r.get("kernel_time") for r in ok])
        if kernels:
            row["kernel_time"] = kernels
        if len(ok) < len(rs):
            row["error"] = f"{len(rs) - len(ok)} of {len(rs)} processes not ok"
        out.append(row)
    return out


def write_report(report: dict, out: Path) -> None:
    """results.json first (the numbers), then the plot and README.md; their failures are noted."""
    combined = _safe(combine_repeats, report["runs"])
    report["combined"] = combined if isinstance(combined, list) else report["runs"]
    report["targets"] = _safe(targets, report["combined"])
    _write_json(out / "results.json", report)
    err = _safe(plot, report["combined"], out / "compile_vs_step.png")
    if err:
        report["plot_error"] = err
    else:
        report.pop("plot_error", None)
    text = _safe(render, report)
    if text.startswith("(render failed"):
        text = f"# kselect bench e2e\n\n{text}; every number is in results.json\n"
    (out / "README.md").write_text(text)
    _write_json(out / "results.json", report)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
    print("usage: python -m kselect.training.bench_e2e --worker SPEC.json (run by `kselect bench e2e`)",
          file=sys.stderr)
    sys.exit(2)
