"""One (variant, workload) of `kselect bench e2e`, in its own cold process: configure the
variant, build the model, run the eager (and fp32) reference, compile, check, time the steps,
profile the kernels; every number goes to the result file as soon as it is known, so a
process that dies still leaves what it measured. Started by the supervisor (bench_e2e) as
`python -m kselect.training.bench.e2e_worker SPEC.json`."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from kselect.kernels.operands import relative_error
from kselect.training.bench.common import GemmCounter, policy_keywords, ranker_ident
from kselect.training.bench.e2e_spec import FAULT_ENV, REF_MULTIPLIER, VARIANTS, write_json
from kselect.training.bench.gpu_state import device_state
from kselect.training.bench.selector_log import SelectorLog
from kselect.training.bench.step_timing import graph_replay_ms, kernel_profile, steady_state, timed_call


def worker_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    res = {k: spec[k] for k in ("variant", "workload", "model", "device", "dtype", "batch", "seq")}
    res["status"] = "running"

    def save():
        write_json(Path(spec["result_path"]), res)

    _watchdog(spec.get("deadline_epoch"))
    try:
        _maybe_fault(spec, "start")
        measure(spec, res, save)
        res["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 -- reported to the supervisor, never lost
        res.update(
            status="error", error=f"{type(exc).__name__}: {exc}"[:2000], traceback=traceback.format_exc()[-6000:]
        )
        traceback.print_exc()
    save()
    try:
        from kselect.selector.inductor import lifecycle as ksi

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
        from kselect.selector.inductor import lifecycle as ksi
        from kselect.training.bench.real_models import REAL_MODELS

        real = REAL_MODELS.get(spec["model"])
        if real is not None and real.selector_from_env:
            # enabled at `import torch` by KSELECT_MODE: Inductor's space is left as the user's
            if ksi.current() is None:
                raise RuntimeError(f"{spec['model']}: KSELECT_MODE in the environment did not enable kselect")
        else:
            # As a user runs it: DEFAULT configured; kselect ranks its own space for the GEMMs it
            # decides (inside their templates stage alone) and narrows a GEMM it cannot rank back
            # to DEFAULT.
            config.max_autotune_gemm_search_space = "DEFAULT"
            ksi.enable(**enable_keywords(spec))
    kwargs = {}
    if v.mode and spec.get("autotune", "gemm") == "gemm":
        config.max_autotune_gemm = True  # GEMM autotuning alone: no pointwise tuning, no graphs
    elif v.mode:
        kwargs["mode"] = v.mode
    return lambda fn: torch.compile(fn, **kwargs)


def enable_keywords(spec: dict) -> dict:
    """kselect.selector.enable()'s keywords for a kselect variant; a variant's own options win."""
    v = VARIANTS[spec["variant"]]
    return {
        "mode": v.kselect,
        "model": spec.get("kselect_model") or None,
        "cache_dir": str(Path(spec["tmp"]) / "kselect-cache"),
        "search_space": spec["kselect_space"],
        **policy_keywords(spec),
        **dict(v.options),
    }


def measure(spec: dict, res: dict, save) -> None:
    """Build the model, run the eager reference, compile, check, time; fill `res` as it goes."""
    t_start = time.monotonic()
    import torch

    from kselect.training.bench.e2e_cases import n_params
    from kselect.training.bench.real_models import build_case

    compile_fn = configure(spec)
    from kselect.selector.inductor import lifecycle as ksi

    # Inductor's own setting, which every op kselect does not decide sees; and the space a GEMM
    # kselect decides is ranked in (kselect's, else the same)
    res["inductor_search_space"] = str(torch._inductor.config.max_autotune_gemm_search_space)
    res["gemm_search_space"] = ksi.ranked_space() or res["inductor_search_space"]
    res["env"] = environment(spec["device"])
    counter, sel_log = instrument(spec)
    device = torch.device(spec["device"])
    if sel_log is not None:  # one-time model load, kept out of compile_s and reported apart
        t0 = time.perf_counter()
        res["kselect_ranker"] = ranker_preflight(device)
        res["kselect_load_s"] = round(time.perf_counter() - t0, 3)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[spec["dtype"]]
    if device.type == "cuda":
        from kselect.kernels.timing import warm_gpu

        torch.cuda.reset_peak_memory_stats()
        warm_gpu()
    if spec.get("warm_pool", True):  # the pool's start must not race the timed compile
        from kselect.selector.compat.compile_pool import warm_compile_pool

        pool_s = warm_compile_pool()
        res["compile_pool_s"] = None if pool_s is None else round(pool_s, 2)
    model, case, res["model_note"] = build_case(spec, device, dtype)
    res["params"] = n_params(model)
    res["setup_s"] = round(time.monotonic() - t_start, 2)
    try:
        _maybe_fault(spec, "compile")
        (run_train_case if spec["workload"] == "train" else run_inference_case)(case, spec, res, save, compile_fn)
    finally:  # what autotuning did, also when the run failed
        res["gemms"] = counter.summary()
        if sel_log is not None:
            from kselect.selector.inductor import lifecycle as ksi

            sel = ksi.current()
            res["kselect"] = sel_log.summary(sel)
            if sel is not None and sel.measurements:  # verify timing its kept sets itself
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
    from kselect.selector.compat import autotune

    counter = GemmCounter()
    autotune.add_feedback_saver(counter)
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
    from kselect.selector.inductor import lifecycle as ksi

    try:
        return ranker_ident(device, selector=ksi.current())
    except Exception as exc:  # noqa: BLE001 -- RankerUnavailable, ImportError, ModelError...
        if device.type == "cuda":
            raise RuntimeError(
                f"kselect cannot rank on this GPU, so this run would measure stock "
                f"Inductor: {type(exc).__name__}: {exc}"
            ) from exc
        return f"unavailable ({type(exc).__name__}: {exc})"


def _graph_count():
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001
        return None


def environment(device: str) -> dict:
    from kselect.training.measure.hardware_record import collect_fingerprint
    from kselect.training.measure.provenance import code_digest

    fp = collect_fingerprint()
    keep = (
        "gpu_name",
        "sm_count",
        "compute_capability",
        "torch_version",
        "triton_version",
        "cuda_version",
        "hip_version",
        "driver_version",
        "python_version",
        "host",
    )
    env = {k: fp.get(k) for k in keep if fp.get(k) is not None}
    env["device"] = device
    env["cpus"] = os.cpu_count()
    env["kselect_code"] = code_digest()
    return env


def timed_compile(fn, device, spec: dict, res: dict):
    """The compiling call, timed: its wall seconds into res["compile_s"] and this process's CPU
    seconds (all threads; not the compile pool's workers) into res["compile_cpu_s"]. The CPU
    figure is the host work a variant adds, without the wall clock's waits on pool and GPU
    that make whole-compile times of one variant spread +-15 % between processes."""
    c0 = time.process_time()
    with compile_profile(spec):
        out, wall = timed_call(fn, device)
    res["compile_cpu_s"] = round(time.process_time() - c0, 3)
    res["compile_s"] = round(wall, 3)
    return out


def _profile_kernels(res: dict, save, fn, device, spec: dict) -> None:
    """The step's kernel time by kind, after the timing (kernel_profile)."""
    n = spec.get("profile_steps", 0)
    if n < 1:
        return
    res["kernel_time"] = kernel_profile(fn, device, n)
    save()


def _record(res, save, timing: dict, tokens_per_step: int) -> None:
    res.update(timing)
    res["tokens_per_s"] = tokens_per_step / (timing["step_ms"] / 1e3)
    save()


def judge(
    err_vs_eager: float, tol: float, err_vs_ref: float | None = None, eager_err_vs_ref: float | None = None
) -> dict:
    """The correctness verdict: within `tol` of eager, or (half dtypes, with an fp32 reference)
    no further from the reference than REF_MULTIPLIER x eager's own error + tol/10."""
    out = {"rel_err": err_vs_eager, "tol": tol, "ok": err_vs_eager <= tol}
    if err_vs_ref is not None and eager_err_vs_ref is not None:
        bound = REF_MULTIPLIER * eager_err_vs_ref + tol / 10
        out.update(
            {
                "rel_err_vs_fp32": err_vs_ref,
                "eager_rel_err_vs_fp32": eager_err_vs_ref,
                "fp32_bound": bound,
                "ok": out["ok"] or err_vs_ref <= bound,
            }
        )
    return out


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
    """The Llama's training step (e2e_cases.llama_train), checked and timed."""
    from kselect.training.bench.e2e_cases import llama_train

    run_train_case(llama_train(model, spec), spec, res, save, compile_fn)


def run_train_case(case, spec, res, save, compile_fn) -> None:
    """Compiled forward + loss (+ its compiled backward), eager AdamW; checked on step 1."""
    import torch

    from kselect.training.bench.e2e_cases import fp32_copy

    params = list(case.module.parameters())
    device = params[0].device
    loss_fn = case.loss_of(case.module)
    inputs = case.inputs

    def eager_grads():
        loss = loss_fn(*inputs)
        loss.backward()
        return loss.detach()

    loss_e, res["eager_first_s"] = timed_call(eager_grads, device)
    grads_e = [p.grad.detach().clone() for p in params]
    for p in params:
        p.grad = None
    ref = None  # (loss, grads) of an fp32 copy: the anchor for half-precision drift
    model32 = fp32_copy(case.module) if case.fp32_module is None else case.fp32_module()
    if model32 is not None:
        loss32 = case.loss_of(model32)(*inputs)
        loss32.backward()
        ref = (float(loss32.detach()), [p.grad.detach() for p in model32.parameters()])
        del model32, loss32
        _return_gpu_memory()
    opt = torch.optim.AdamW(params, lr=1e-5, **({"fused": True} if device.type == "cuda" else {}))
    compiled = compile_fn(loss_fn) if case.compile is None else case.compile(compile_fn, case.module, loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = compiled(*inputs)
        loss.backward()
        opt.step()
        return loss.detach()

    loss_c = timed_compile(step, device, spec, res)
    res["compile_phases"] = compile_phases()
    save()
    grads_c = [torch.zeros_like(g) if p.grad is None else p.grad for p, g in zip(params, grads_e)]
    grad_err = _global_rel_err(grads_c, grads_e)
    worst = max(relative_error(c, g) for c, g in zip(grads_c, grads_e))

    def loss_rel(a, b):
        return abs(float(a) - float(b)) / max(abs(float(b)), 1e-30)

    loss_err = loss_rel(loss_c, loss_e)
    vs_ref = eager_vs_ref = None
    if ref is not None:  # step 1's gradients (the optimizer has not touched them)
        vs_ref = max(loss_rel(loss_c, ref[0]), _global_rel_err(grads_c, ref[1]))
        eager_vs_ref = max(loss_rel(loss_e, ref[0]), _global_rel_err(grads_e, ref[1]))
    del grads_e, grads_c, ref
    _return_gpu_memory()
    res["correctness"] = {
        "what": "step-1 loss and gradients (global relative norm) vs eager",
        **judge(max(loss_err, grad_err), spec["rtol"], vs_ref, eager_vs_ref),
        "loss_rel_err": loss_err,
        "grad_rel_err": grad_err,
        "grad_rel_err_worst_tensor": worst,
        "loss_eager": float(loss_e),
        "loss_compiled": float(loss_c),
    }
    save()
    _record(
        res,
        save,
        steady_state(step, device, spec["steps"], spec["warmup"], spec.get("warmup_s", 0.0)),
        case.tokens_per_step,
    )
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


def run_inference_case(case, spec, res, save, compile_fn) -> None:
    """Eager, fp32 (half dtypes) and compiled outputs of one inference step compared; the
    compiled step timed eagerly, then as a CUDA-graph replay, then profiled."""
    import torch

    fn, args = case.fn, case.inputs
    device = _device_of(args)
    with torch.no_grad():
        ref = case.fp32_reference() if case.fp32_reference is not None else None
        _return_gpu_memory()
        want, res["eager_first_s"] = timed_call(lambda: fn(*args), device)
        compiled = compile_fn(fn)
        got = timed_compile(lambda: compiled(*args), device, spec, res)
        res["compile_phases"] = compile_phases()
        anchored = (relative_error(got, ref), relative_error(want, ref)) if ref is not None else (None, None)
        res["correctness"] = {
            "what": "last-position logits vs eager (relative norm)",
            **judge(relative_error(got, want), spec["rtol"], *anchored),
        }
        del ref
        save()
        before = device_state(device)
        timing = steady_state(
            lambda: compiled(*args),
            device,
            spec["steps"],
            spec["warmup"],
            spec.get("warmup_s", 0.0),
            snapshot=lambda: device_state(device),
        )
        warmed = timing.pop("after_warmup", None)
        _record(res, save, timing, case.tokens_per_step)
        graph = graph_replay_ms(lambda: compiled(*args), device, profile_steps=spec.get("profile_steps", 0))
        graph = graph or {}
        if before is not None:
            during = {"during_replays": graph.pop("during_replays")} if "during_replays" in graph else {}
            res["device_state"] = {
                "before_steps": before,
                **({"after_warmup": warmed} if warmed else {}),
                **during,
                "after_replays": device_state(device),
            }
        res.update(graph)
        save()
        _profile_kernels(res, save, lambda: compiled(*args), device, spec)


def run_decode(model, spec, res, save, compile_fn) -> None:
    """The Llama's decode step (e2e_cases.llama_decode), checked and timed."""
    from kselect.training.bench.e2e_cases import llama_decode

    run_inference_case(llama_decode(model, spec), spec, res, save, compile_fn)


def _device_of(args):
    """The device of a step's first tensor argument (the CPU when it has none)."""
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cpu")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(
            "usage: python -m kselect.training.bench.e2e_worker SPEC.json (run by `kselect bench e2e`)", file=sys.stderr
        )
        sys.exit(2)
    worker_main(sys.argv[1])
