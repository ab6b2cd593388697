"""Verify's readings on the qwen2.5-7b lm_head: the card's state under sustained replay, or verify's path.

The rule: reports/device/rules.md, "Verify's readings: the lm_head". On the unseen
set verify read its pick 12-15 % faster than the compiled function ran on this one weight
(N = 152064, K = 3584, bf16, layout nt: a 1.09 GB weight) at M = 2, 8, 32, 128 and 8192, and
within 4 % at M = 512 and 2048 (reports/2026-12-07-verify-readings-unseen-h100).

For the seven GEMMs (the rows of data/shapes/unseen-bench.csv with that N and K), in one process,
as reports/2026-12-06-verify-aten-reading/conditions.py does: `kselect bench gemm`'s plain
compile and its kselect-verify compile of the GEMM (`measure_shape`, which reads each compiled
function once: way `bench`; which goes first alternates by GEMM), each compiled function read,
before the next compile, three ways, each way a block of the bench's read (`time_runners`,
target 0.5 ms, 9 replays, over the bench's rotating operands):
- `idle_300ms`: the GPU idles 300 ms before each read;
- `verify_idle`: after each read the GPU idles IDLE_RATIO x the read's wall time (verify's idle,
  selector/verify/timing.py);
- `back_to_back`: the reads one after another (the bench's read, sustained);
in that order, so the sustained way's heat does not fall on the idled ones, with SETTLE_S of idle
before each function's blocks. A block reads at least --reads times and for at least
--min-block-s, so nvidia-smi's 100 ms samples see it. Besides (where the step would lie if the
gap is verify's path, as the 2026-12-06 diagnosis named it):
- `verify_reading`: verify's own reading of its pick, inside its decision (the bench row's
  `kselect_measured_ms[chosen]`), with the window of verify's timing;
- functions `verify_pick` / `verify_aten`: verify's own runners of its pick (and of ATen, where it
  picked a template), on its operands and side stream, read the three ways right after its
  decision;
- way `one_set_back_to_back`: verify's compiled function back to back over its first operand set
  alone (verify reads a weight this large over one set: MAX_ROTATION_BYTES);
- the CUDA kernels each path launches (torch.profiler).
nvidia-smi logs the SM and memory clocks, power and the clock-event reasons every 100 ms
(smi.csv); every read carries its wall-clock window (epoch seconds) and every block NVML's SM
clock and the energy counter's power over it (training/bench/gpu_state.StateSampler), so
judge.py can tell which reads ran at the software power cap (reason 0x4).

Writes into OUT_DIR: results.jsonl (one record per GEMM x function x way, and one `gemm` record
per GEMM), meta.json (card, versions, the settings, the clock offset to read smi.csv's local
timestamps), smi.csv, smi.pid.

Usage: python lm_head.py OUT_DIR [--reads 5] [--min-block-s 1.0] [--deadline-s 400] [--m 8192] [--protocols] [--dry-run]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-06-verify-aten-reading"))
from diagnose import kernel_names  # noqa: E402 -- the diagnosis's profiler read of a runner's kernels

SHAPES_FILE = str(HERE.parents[1] / "data" / "shapes" / "unseen-bench.csv")
LM_HEAD = (152064, 3584)  # N, K of qwen2.5-7b's lm_head
RULE_MS = (2, 8, 32, 128, 8192)  # the five verify read 12-15 % fast; the rule is judged on them
READ = {"target_ms": 0.5, "replays": 9}  # the bench's read of a compiled function (training/bench/gemm_worker.py)
WAYS = ("idle_300ms", "verify_idle", "back_to_back")  # the order they run in
IDLE_BEFORE_S = 0.3
SETTLE_S = 1.0
MAX_READS = 400  # a block's cap, whatever --min-block-s asks
# nvidia-smi's fields; the clock-event reasons' newer spelling first, then the older one
SMI_FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
ROW_FIELDS = (
    "compile_s",
    "chosen",
    "kept",
    "kselect_measured_ms",
    "kselect_measure_wall_ms",
    "kernel_ms",
    "kernel_spread",
    "rel_error",
    "correct",
    "fallbacks",
)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("out", help="output folder")
    ap.add_argument("--reads", type=int, default=5, help="reads per block, at least")
    ap.add_argument("--min-block-s", type=float, default=1.0, help="a block's wall time, at least")
    ap.add_argument("--deadline-s", type=float, default=400, help="no GEMM starts after this many seconds")
    ap.add_argument("--model", default=None, help="verify's model (default: the shipped one for this card)")
    ap.add_argument("--shapes-file", default=SHAPES_FILE)
    ap.add_argument("--m", default="", help="comma-separated M values (default: all seven)")
    ap.add_argument("--nk", default=",".join(map(str, LM_HEAD)), help="the weight's N,K (default the lm_head's)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke of the flow, for checking the script only")
    ap.add_argument(
        "--protocols",
        action="store_true",
        help="after verify's timing, read its kept set again and ATen alone under verify's protocol and variants of it",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the plan and check the imports; no GPU")
    args = ap.parse_args(argv)
    if args.reads < 1 or args.min_block_s < 0:
        ap.error("--reads must be >= 1 and --min-block-s >= 0")
    return args


def lm_head_problems(shapes_file: str, only_m: str = "", nk: tuple[int, int] = LM_HEAD):
    """The lm_head rows of the shapes file, the rule's five first, then their neighbours."""
    from kselect.training.workloads.shapes import read_shapes_csv

    got = [p for p in read_shapes_csv(shapes_file) if (p.N, p.K) == nk]
    if only_m:
        keep = {int(m) for m in only_m.split(",")}
        got = [p for p in got if p.M in keep]
    if not got:
        raise SystemExit(f"no {nk[0]}x{nk[1]} rows in {shapes_file}" + (f" for M in {only_m}" if only_m else ""))
    return sorted(got, key=lambda p: (p.M not in RULE_MS, p.M))


def smi_query(run=subprocess.run) -> str:
    """The fields nvidia-smi accepts: SMI_FIELDS and the reasons field in the first spelling it
    knows (driver 580 knows both); SMI_FIELDS alone if it knows neither; '' without nvidia-smi."""
    for reasons in (*REASON_FIELDS, None):
        query = SMI_FIELDS + (f",{reasons}" if reasons else "")
        try:
            r = run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", "-i", "0"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        if r.returncode == 0 and "valid field" not in r.stdout + r.stderr:
            return query
    return ""


def start_smi(out: Path, query: str):
    """nvidia-smi logging `query` every 100 ms into out/smi.csv (its pid in out/smi.pid), or None."""
    if not query:
        return None
    proc = subprocess.Popen(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv", "-lms", "100", "-i", "0"],
        stdout=open(out / "smi.csv", "w"),
        stderr=subprocess.DEVNULL,
    )
    (out / "smi.pid").write_text(f"{proc.pid}\n")
    return proc


def read_block(runners, way: str, *, reads: int, min_block_s: float, stream=None, device: str = "cuda") -> dict:
    """Read `runners` (one per operand set) `way`, each read the bench's `time_runners`; per read
    its median ms and wall window, per block the median over the reads and the GPU's state."""
    import torch

    from kselect.kernels.timing import time_runners
    from kselect.selector.verify.timing import IDLE_RATIO
    from kselect.training.bench.gpu_state import StateSampler

    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    got: list[dict] = []
    sampler = StateSampler(torch.device(device), period_s=0.02)
    with sampler:
        start = time.time()
        while len(got) < MAX_READS and (len(got) < reads or time.time() - start < min_block_s):
            if way == "idle_300ms":
                sync()
                time.sleep(IDLE_BEFORE_S)
            t0 = time.time()
            t = time_runners(runners, device=device, stream=stream, **READ)
            t1 = time.time()
            got.append({"ms": t.median_ms, "spread": round(t.spread, 4), "t0": t0, "t1": t1})
            if way == "verify_idle":
                time.sleep((t1 - t0) * IDLE_RATIO)
        end = time.time()
    ms = [g["ms"] for g in got]
    return {
        "way": way,
        "ms": statistics.median(ms),
        "first_ms": ms[0],
        "min_ms": min(ms),
        "max_ms": max(ms),
        "n": len(ms),
        "t0": start,
        "t1": end,
        "state": sampler.summary(),
        "reads": got,
    }


@contextlib.contextmanager
def bench_read(last: dict):
    """Keep the last `time_runners` call's runners, timing and window in `last`: `measure_shape`
    imports time_runners from kselect.kernels.timing when it runs and ends on the compiled
    function's read, so after it `last` holds the bench's runners and reading."""
    from kselect.kernels import timing

    orig = timing.time_runners

    def keeping(runners, **kw):
        t0 = time.time()
        t = orig(runners, **kw)
        last.update(runners=list(runners), ms=t.median_ms, spread=t.spread, t0=t0, t1=time.time())
        return t

    timing.time_runners = keeping
    try:
        yield last
    finally:
        timing.time_runners = orig


def read_protocols(runners: dict, aten: int, bound: dict, stream, device: str, describe, choices) -> dict:
    """Verify's timing protocol on the runners it just timed, and variants that each drop one of
    its steps, to find which step makes a reading differ from the compiled function's:
    - `set_again`: the kept set once more, as verify read it (the duty-cycled warm-up, then
      ROUNDS interleaved rounds with IDLE_RATIO idle after each read): does the reading repeat?
    - `aten_alone`: ATen's runners alone, the same way: do the set's other kernels matter?
    - `aten_alone_no_warm`: ATen alone after SETTLE_S idle, no warm-up;
    - `aten_alone_no_idle`: ATen alone with the warm-up but no idle between reads.
    Each: the median over rounds (verify's reading), the rounds, and the wall window."""
    from kselect.kernels.timing import time_interleaved, warm_gpu
    from kselect.selector.verify import timing as vt

    per_round = max(1, -(-bound["replays"] // vt.ROUNDS))
    plans = {
        "set_again": (list(runners), True, vt.IDLE_RATIO),
        "aten_alone": ([aten], True, vt.IDLE_RATIO),
        "aten_alone_no_warm": ([aten], False, vt.IDLE_RATIO),
        "aten_alone_no_idle": ([aten], True, 0.0),
    }
    if aten not in runners:
        return {}
    out = {}
    for name, (which, warm, idle) in plans.items():
        settle(device)  # each read starts from the same rest (the caller settles after the last)
        if device == "cuda" and warm:
            warm_gpu(vt.WARM_MS, duty=vt.WARM_DUTY)
        t0 = time.time()
        got = time_interleaved(
            [runners[i] for i in which],
            rounds=vt.ROUNDS,
            replays=per_round,
            target_ms=bound["target_ms"],
            device=device,
            stream=stream,
            idle_ratio=idle if device == "cuda" else 0.0,
        )
        out[name] = {
            "t0": t0,
            "t1": time.time(),
            "ms": {describe(choices[i]): statistics.median(got.ms[k]) for k, i in enumerate(which)},
            "rounds": {describe(choices[i]): list(got.ms[k]) for k, i in enumerate(which)},
        }
    return out


def watch_verify(decisions: list, kw: dict, protocols: bool = False):
    """Wrap verify's timing of its kept set: record its window and readings, then read its pick
    (and ATen, where the pick is a template) on its own runners and stream the three ways (`kw`:
    read_block's reads, min_block_s, device). Returns a function that removes the wrap."""
    from kselect.selector.verify import timing as vt
    from kselect.selector.verify.pick import VerifyTimingUnavailable
    from kselect.training.bench.common import describe_choice

    orig = vt._judge_and_time
    sig = inspect.signature(orig)

    def judged(*args, **kwargs):
        a = sig.bind(*args, **kwargs).arguments
        t0 = time.time()
        got = orig(*args, **kwargs)
        choices, runners, stream = a["choices"], a["runners"], a["stream"]
        rec = {"t0": t0, "t1": time.time(), "ms": {describe_choice(choices[i]): got.ms[i] for i in runners}}
        rec["rounds"] = {describe_choice(choices[i]): list(got.rounds.get(i, [])) for i in runners}
        try:
            win = got.winner()
        except VerifyTimingUnavailable:
            win = None
        rec["winner"] = describe_choice(choices[win]) if win is not None else None
        rec["blocks"], rec["kernels"] = {}, {}
        try:
            for role, i in (("verify_pick", win), ("verify_aten", got.reference)):
                if i is None or i not in runners or (role == "verify_aten" and i == win):
                    continue
                if kw["device"] == "cuda":
                    rec["kernels"][role] = kernel_names(runners[i][0], stream)
                rec["blocks"][role] = []
                for way in WAYS:
                    b = read_block(runners[i], way, stream=stream, **kw)
                    rec["blocks"][role].append(b | {"choice": describe_choice(choices[i])})
            if protocols:
                rec["protocols"] = read_protocols(
                    runners, got.reference, a, stream, kw["device"], describe_choice, choices
                )
            # the bench's read of the compiled function comes next: not right after a sustained block
            settle(kw["device"])
        except Exception as exc:  # noqa: BLE001 -- verify's decision stands; the extra reads are reported lost
            rec["error"] = f"{type(exc).__name__}: {exc}"[:400]
        decisions.append(rec)
        return got

    vt._judge_and_time = judged

    def unwrap():
        vt._judge_and_time = orig

    return unwrap


def settle(device: str = "cuda") -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    time.sleep(SETTLE_S)


def head(problem) -> dict:
    return {"problem": problem.key, "M": problem.M, "N": problem.N, "K": problem.K}


def measure_gemm(problem, n: int, selector, decisions: list, args, emit) -> None:
    """One GEMM, plain and verify (which goes first alternates with n), each: its compile and
    the bench's read of it, verify's reading and path, then the compiled function's blocks.
    Each function is read before the next compile: `measure_shape` starts with
    torch._dynamo.reset(), after which a function compiled before would compile again, outside
    the bench's max-autotune settings. Records go to `emit`."""
    from kselect.training.bench import gemm_worker as bench

    order = ("plain", "verify") if n % 2 == 0 else ("verify", "plain")
    gemm = head(problem) | {"kind": "gemm", "order": list(order), "kernels": {}}
    for function in order:
        last: dict = {}
        k0 = len(decisions)
        variant = "plain" if function == "plain" else "kselect-verify"
        with bench_read(last):
            row = bench.measure_shape(problem, variant, selector if function == "verify" else None, args.device)
        gemm[function] = {k: row[k] for k in ROW_FIELDS if k in row}
        runners = last.pop("runners")
        emit(head(problem) | {"function": function, "way": "bench", "n": 1, "first_ms": last["ms"]} | last)
        if function == "verify":
            verify_records(problem, row, decisions[k0:], gemm, emit)
        settle(args.device)
        for way in WAYS:
            emit(head(problem) | {"function": function} | read_block(runners, way, **block_kw(args)))
        if function == "verify":
            b = read_block(runners[:1], "back_to_back", **block_kw(args))
            emit(head(problem) | {"function": function} | b | {"way": "one_set_back_to_back"})
        if args.device == "cuda":
            gemm["kernels"][function] = kernel_names(runners[0])
        del runners, last  # GBs of operands: gone before the next compile
    emit(gemm)


def verify_records(problem, row: dict, decisions: list, gemm: dict, emit) -> None:
    """Verify's path blocks and its reading of its pick (with its timing's window)."""
    for rec in decisions:
        for role, blocks in rec["blocks"].items():
            for b in blocks:
                emit(head(problem) | {"function": role} | b)
        gemm.setdefault("verify_path", []).append(
            {k: rec.get(k) for k in ("ms", "rounds", "winner", "kernels", "error", "t0", "t1")}
        )
        for name, p in (rec.get("protocols") or {}).items():
            for choice, ms in p["ms"].items():
                emit(
                    head(problem)
                    | {
                        "function": "verify_protocol",
                        "way": name,
                        "choice": choice,
                        "ms": ms,
                        "n": len(p["rounds"][choice]),
                    }
                    | {"first_ms": p["rounds"][choice][0], "rounds": p["rounds"][choice], "t0": p["t0"], "t1": p["t1"]}
                )
    reading = (row.get("kselect_measured_ms") or {}).get(row.get("chosen") or "")
    if reading is not None and decisions:
        rec = decisions[-1]
        emit(
            head(problem)
            | {"function": "verify", "way": "verify_reading", "ms": reading, "first_ms": reading, "n": 1}
            | {"t0": rec["t0"], "t1": rec["t1"], "chosen": row.get("chosen")}
        )


def block_kw(args) -> dict:
    return {"reads": args.reads, "min_block_s": args.min_block_s, "device": args.device}


def environment(args, query: str) -> dict:
    import torch

    meta = {
        "torch": torch.__version__,
        "start": time.time(),
        "utc_offset_s": time.localtime().tm_gmtoff,  # smi.csv's timestamps are local time
        "smi_query": query,
        "read": READ,
        "ways": WAYS,
        "idle_before_s": IDLE_BEFORE_S,
        "settle_s": SETTLE_S,
        "rule_ms": RULE_MS,
        "args": vars(args),
    }
    with contextlib.suppress(ImportError):
        import triton

        meta["triton"] = triton.__version__
    from kselect.selector.verify import timing as vt

    meta["idle_ratio"] = vt.IDLE_RATIO
    if args.device == "cuda":
        meta["card"] = torch.cuda.get_device_name(0)
    return meta


def dry_run(args, problems) -> int:
    """The plan, the output paths and the imports the run needs, without a GPU."""
    from kselect.kernels.timing import time_runners  # noqa: F401 -- importable is the check
    from kselect.selector.inductor import lifecycle  # noqa: F401
    from kselect.selector.verify import timing as vt
    from kselect.training.bench import gemm_worker as bench
    from kselect.training.bench.gpu_state import StateSampler  # noqa: F401

    params = set(inspect.signature(vt._judge_and_time).parameters)
    missing = {"choices", "runners", "stream", "target_ms", "replays"} - params
    if missing or not hasattr(bench, "measure_shape"):
        print(f"the project moved: _judge_and_time lacks {sorted(missing)} or bench has no measure_shape")
        return 1
    out = Path(args.out)
    print(f"{len(problems)} GEMMs: " + ", ".join(p.key for p in problems))
    print(
        f"ways {WAYS} + one_set_back_to_back (verify's compiled function); each >= {args.reads} reads and >= {args.min_block_s} s"
    )
    print(f"idle ratio {vt.IDLE_RATIO}, idle before {IDLE_BEFORE_S} s, settle {SETTLE_S} s, read {READ}")
    print(f"nvidia-smi query (first accepted): {SMI_FIELDS},{REASON_FIELDS[0]} | {REASON_FIELDS[1]}")
    for name in ("results.jsonl", "meta.json", "smi.csv", "smi.pid"):
        print(f"would write {out / name}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    n, k = (int(x) for x in args.nk.split(","))
    problems = lm_head_problems(args.shapes_file, args.m, (n, k))
    if args.dry_run:
        return dry_run(args, problems)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.deadline_s
    query = smi_query() if args.device == "cuda" else ""
    smi = start_smi(out, query)
    # `timeout` ends the run with SIGTERM: leave through the finally below, which stops nvidia-smi
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(args, problems, out, deadline, query)
    finally:
        if smi is not None:
            smi.terminate()
            smi.wait(timeout=10)


def run(args, problems, out: Path, deadline: float, query: str) -> int:
    import torch

    from kselect.kernels.timing import warm_gpu
    from kselect.selector.compat.compile_pool import warm_compile_pool
    from kselect.selector.inductor import lifecycle as ksi

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: this run times GPU kernels (--device cpu smokes the flow only)")
        return 2
    meta = environment(args, query)
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    results = out / "results.jsonl"

    def emit(rec: dict) -> None:
        with open(results, "a") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")
        if "way" in rec:
            print(
                f"{rec['problem']} {rec['function']:<12} {rec['way']:<20} {rec['ms']:.4f} ms"
                f" ({rec.get('n')} reads, {rec['t1'] - rec['t0']:.2f} s)",
                flush=True,
            )
        else:
            print(
                f"{rec['problem']} done {json.dumps(rec.get('error') or rec.get('kernels'), default=str)}", flush=True
            )

    # as `kselect bench gemm`'s worker: the GPU warm, one throw-away compile, the compile workers up
    if args.device == "cuda":
        warm_gpu()
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device=args.device))
    torch._dynamo.reset()
    warm_compile_pool()
    from torch._inductor import config as ic

    ic.max_autotune_gemm_search_space = "DEFAULT"  # what a user has configured; enable() widens it
    selector = ksi.enable("verify", model=args.model)
    decisions: list = []
    unwrap = watch_verify(decisions, block_kw(args), protocols=args.protocols)
    try:
        for n, problem in enumerate(problems):
            if time.time() > deadline:
                emit(head(problem) | {"kind": "gemm", "skipped": "deadline"})
                continue
            try:
                measure_gemm(problem, n, selector, decisions, args, emit)
            except Exception as exc:  # noqa: BLE001 -- a failing GEMM is a result
                emit(head(problem) | {"kind": "gemm", "error": f"{type(exc).__name__}: {exc}"[:400]})
            gc.collect()  # the runners hold GBs of operands: free them before the next GEMM
            if args.device == "cuda":
                torch.cuda.empty_cache()
    finally:
        unwrap()
        ksi.disable()
    meta["end"] = time.time()
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
