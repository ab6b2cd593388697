"""One process of the never-widen check: compile single GEMM ops under max-autotune as a user
would, stock or under kselect, and write what Inductor built, benchmarked and how long each
compile took (tests/selector/test_gpu_never_widen.py runs it; so did the GPU probe of
reports/2026-12-07-never-widen-h100).

    python tests/selector/never_widen_worker.py --arm stock|verify|predict --out FILE [--ops a,b]
    python tests/selector/never_widen_worker.py --arms stock,verify,predict --shift R --out FILE

Each op is compiled cold in this process (its own Dynamo state; the caller gives every process a
fresh TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR), after a warm-up compile of an elementwise
op so that the process's one-time set-up lands on no GEMM.

`--arms` compiles each op once under every arm named, in this one process, one after another:
stock with kselect off (`disable()`), verify and predict inside `selecting()`, each compile in a
fresh Inductor and Triton cache (Inductor's `fresh_cache`, which its compile workers follow) and
a fresh Dynamo state, the arms' order turned by one per op and by `--shift` per process. The
compile seconds of a cold process spread 1.3-1.6x from one process to the next on the H100, all
ops of a process together (reports/2026-12-07-never-widen-h100, section 6); compiles of the arms
side by side in one process share that process's state, so their ratio reads kselect's cost.
Here kselect's global hooks are registered in every compile (stock's too, where they act on
nothing): the choices a fully stock process builds are held by the one-arm processes. Recorded per op, from Inductor's own
hooks: every choice list Inductor built (a preprocessing fn ahead of kselect's), the list it went
on with (one behind kselect's), the choices it benchmarked (a feedback saver), the GEMM search
space in force at each template-config generation (a spy on InductorChoices.get_ktc), the
function serving the op's lowering, the compile's wall time and the parts of it Inductor spent
precompiling and benchmarking the choices, whether Inductor's compile-worker pool was ready as the
compile began (the first GEMM of a process precompiled in its own threads and benchmarked 104
choices in ~1.3 s, the later ones in 23-53 s: reports/2026-12-07-never-widen-h100, section 7),
the output's error against eager, and the card's state (SM clock, temperature, power) before and
after the compile.
"""

from __future__ import annotations

import argparse
import json
import re
import time

import torch

F8, BF = torch.float8_e4m3fn, torch.bfloat16

# op -> (M, N, K) as the issue measured them on the H200 (the grouped one: 8 experts, 1,024
# tokens, 2048 -> 1408)
SHAPES = {
    "scaled_mm_rowwise": (128, 8192, 4096),
    "scaled_mm_tensorwise": (128, 8192, 4096),
    "grouped_mm": (1024, 1408, 2048),
    "int_mm": (128, 8192, 4096),
    "fp32_mm": (256, 2048, 2048),
    "bf16_mm": (256, 2048, 2048),  # decided: the contrast
}


def _operands(op: str, device: str = "cuda"):
    g = torch.Generator(device=device).manual_seed(0)
    m, n, k = SHAPES[op]

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, device=device).to(dtype)

    if op.startswith("scaled_mm"):
        a, b = r(m, k, dtype=F8), r(n, k, dtype=F8).t()  # B column-major, as _scaled_mm needs
        if op.endswith("rowwise"):
            sa, sb = torch.rand(m, 1, device=device) + 0.5, torch.rand(1, n, device=device) + 0.5
        else:
            sa, sb = torch.tensor(0.5, device=device), torch.tensor(2.0, device=device)
        return (lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=BF)), (a, b, sa, sb)
    if op == "grouped_mm":
        groups = 8
        a, b = r(m, k, dtype=BF), r(groups, n, k, dtype=BF).transpose(-2, -1)  # (G, K, N), K-major
        offs = torch.arange(1, groups + 1, device=device, dtype=torch.int32) * (m // groups)
        return (lambda a, b, offs: torch._grouped_mm(a, b, offs)), (a, b, offs)
    if op == "int_mm":
        a = torch.randint(-8, 8, (m, k), generator=g, device=device, dtype=torch.int8)
        b = torch.randint(-8, 8, (k, n), generator=g, device=device, dtype=torch.int8)
        return torch._int_mm, (a, b)
    dtype = torch.float32 if op == "fp32_mm" else BF
    return torch.mm, (r(m, k, dtype=dtype), r(k, n, dtype=dtype))


def _gpu_state(device: str) -> dict:
    """The card's SM clock, temperature and power now (NVML, training/bench/gpu_state.py, as the
    e2e bench reads them): a compile's benchmarking runs at the card's clocks, so a hot or capped
    card reads as a slower compile."""
    from kselect.training.bench.gpu_state import nvml_readings

    return nvml_readings(torch.device(device)) if device == "cuda" else {}


def _pool_ready() -> bool | None:
    """Whether Inductor's compile-worker pool had answered its readiness job: until it has,
    Inductor precompiles a template's choices in this process's threads, after it in the pool
    (torch/_inductor/async_compile.py, `use_process_pool`; select_algorithm.py,
    `make_precompile_fn`). None where no pool is set up. Read only: asking `use_process_pool`
    would submit the job and start the pool."""
    from torch._inductor.async_compile import AsyncCompile

    ready = AsyncCompile._ready_future
    return None if ready is None else ready.done()


ARMS = ("stock", "verify", "predict")


def _arms(text: str) -> tuple[str, ...]:
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    bad = [a for a in arms if a not in ARMS]
    if bad or len(set(arms)) != len(arms) or "stock" not in arms:
        raise SystemExit(f"--arms: distinct arms of {', '.join(ARMS)}, stock among them; got {text!r}")
    return arms


def turned(arms: tuple[str, ...], shift: int) -> tuple[str, ...]:
    """`arms` in the order a process with this shift runs them: turned by one per shift."""
    shift %= len(arms)
    return arms[shift:] + arms[:shift]


def _stem(choice) -> str:
    return re.sub(r"_\d+$", "", str(getattr(choice, "name", choice)))  # the per-compile counter off


def _lowering_name(op: str) -> str:
    from torch._inductor.lowering import lowerings

    aten = torch.ops.aten
    target = {
        "scaled_mm_rowwise": aten._scaled_mm.default,
        "scaled_mm_tensorwise": aten._scaled_mm.default,
        "grouped_mm": aten._grouped_mm.default,
        "int_mm": aten._int_mm.default,
    }.get(op, aten.mm.default)  # fp32_mm, bf16_mm
    fn = lowerings.get(target)
    return getattr(fn, "__name__", str(fn))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    arms = ap.add_mutually_exclusive_group(required=True)
    arms.add_argument("--arm", choices=ARMS, help="one arm for the whole process")
    arms.add_argument("--arms", help="arms compiled side by side in this process, comma-separated")
    ap.add_argument("--shift", type=int, default=0, help="--arms: turn the arms' order by this much (the repeat)")
    ap.add_argument("--ops", default=",".join(SHAPES))
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--device", default="cuda", help="cpu: the mechanics alone, for the ops a CPU lowers (fp32_mm, bf16_mm)"
    )
    ap.add_argument(
        "--settle-pool",
        action="store_true",
        help="after the warm-up, wait until Inductor's compile-worker pool is ready, so the first GEMM"
        " compiles as the later ones do (the position probe)",
    )
    ap.add_argument("--off", default="", help="kselect settings turned off, comma-separated (e.g. warm_start)")
    args = ap.parse_args(argv)
    side_by_side = _arms(args.arms) if args.arms else None
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 as IEEE fp32: an op kselect leaves to stock

    from torch._inductor import config as inductor_config
    from torch._inductor import select_algorithm
    from torch._inductor.choices import InductorChoices

    state: dict = {"op": None}
    rows: dict = {}

    def built(choices):  # ahead of kselect's preprocessing: what Inductor built
        if state["op"]:
            rows[state["op"]]["built"].append(sorted(_stem(c) for c in choices))
        return choices

    select_algorithm.add_preprocessing_fn(built)
    off = {name: False for name in filter(None, args.off.split(","))}
    if side_by_side:
        from kselect.selector import disable, enable

        enable("verify", **off)  # kselect's global hooks registered between `built` and `handed_on`
        disable()
    elif args.arm != "stock":
        from kselect.selector import enable

        enable(args.arm, **off)

    def handed_on(choices):  # behind kselect's: what Inductor goes on with
        if state["op"]:
            rows[state["op"]]["handed_on"].append(sorted(_stem(c) for c in choices))
        return choices

    def saver(timings, name, input_nodes, choices, profiled_time_fn, precompile_times):
        if state["op"]:
            rows[state["op"]]["benchmarked"].append(sorted(_stem(c) for c in timings))

    select_algorithm.add_preprocessing_fn(handed_on)
    select_algorithm.add_feedback_saver(saver)
    get_ktc = InductorChoices.get_ktc

    def spy_get_ktc(self, kernel_inputs, template, op_name, kwarg_overrides=None):
        if state["op"]:
            rows[state["op"]]["spaces"].append([op_name, str(inductor_config.max_autotune_gemm_search_space).upper()])
        return get_ktc(self, kernel_inputs, template, op_name, kwarg_overrides)

    InductorChoices.get_ktc = spy_get_ktc

    # where a compile's time goes: Inductor's precompilation of the choices and its benchmarking
    # of them (wall seconds, summed per op); the rest is lowering, code generation and kselect
    cache_cls = select_algorithm.AlgorithmSelectorCache
    autotune, make_precompile_fn = cache_cls.autotune, cache_cls.make_precompile_fn

    def _add(field: str, seconds: float) -> None:
        if state["op"]:
            rows[state["op"]][field] = rows[state["op"]].get(field, 0.0) + seconds

    def timed_autotune(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return autotune(self, *args, **kwargs)
        finally:
            _add("benchmark_s", time.perf_counter() - t0)

    def timed_make_precompile_fn(self, *args, **kwargs):
        precompile = make_precompile_fn(self, *args, **kwargs)

        def timed_precompile():
            t0 = time.perf_counter()
            try:
                return precompile()
            finally:
                _add("precompile_s", time.perf_counter() - t0)

        return timed_precompile

    cache_cls.autotune, cache_cls.make_precompile_fn = timed_autotune, timed_make_precompile_fn

    # the process's one-time set-up (CUDA context, Triton's target, the compile workers) on no GEMM
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    x = torch.randn(1024, device=args.device)
    torch.compile(lambda t: (t * 2).relu(), mode="max-autotune-no-cudagraphs")(x)
    sync()
    if args.settle_pool:
        from torch._inductor.async_compile import AsyncCompile

        AsyncCompile.wait_pool_ready()  # returns at once where the user's settings give no pool

    def compile_op(op: str) -> dict:
        """Compile `op` cold under whatever kselect configuration is in force; its row."""
        fn, operands = _operands(op, args.device)
        with torch.no_grad():
            want = fn(*operands)
        torch._dynamo.reset()
        row = rows[op] = {"built": [], "handed_on": [], "benchmarked": [], "spaces": []}
        state["op"] = op
        row["gpu_before"] = _gpu_state(args.device)
        row["pool_ready"] = _pool_ready()
        started = time.perf_counter()
        try:
            with torch.no_grad():
                got = torch.compile(fn, mode="max-autotune-no-cudagraphs")(*operands)
            sync()
            row["compile_s"] = time.perf_counter() - started
            diff = (got.float() - want.float()).abs().max().item()
            scale = want.float().abs().max().item() or 1.0
            row["max_rel_error"] = diff / scale
        except Exception as exc:  # noqa: BLE001 -- recorded: the test names it
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            state["op"] = None
        row["gpu_after"] = _gpu_state(args.device)
        row["lowering"] = _lowering_name(op)
        row["search_space"] = str(inductor_config.max_autotune_gemm_search_space)
        return rows.pop(op)

    from kselect.selector.inductor import lifecycle

    ops = args.ops.split(",")
    if side_by_side:
        from torch._inductor.utils import fresh_cache

        by_op: dict = {}
        for index, op in enumerate(ops):
            order = turned(side_by_side, index + args.shift)
            by_op[op] = {"order": list(order)}
            for arm in order:
                with fresh_cache():
                    if arm == "stock":
                        row = compile_op(op)
                    else:
                        with lifecycle.selecting(arm, **off) as sel:
                            row = compile_op(op)
                            row["stats"] = dict(sel.stats) if sel is not None else None
                by_op[op][arm] = row
        result = {"arms": list(side_by_side), "shift": args.shift, "ops": by_op}
    else:
        result = {"arm": args.arm, "ops": {op: compile_op(op) for op in ops}}
        sel = lifecycle.current()
        result["stats"] = dict(sel.stats) if sel is not None else None
    result.update(
        {"torch": torch.__version__, "card": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
    )
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
