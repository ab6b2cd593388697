"""Which measurement conditions make verify read what the compiled function runs.

The diagnosis (diagnose.py, first call) found verify's readings 3-25 % slow on mid-size and
large GEMMs while a read after 300 ms idle matched the compiled function within 1 %, and the
card at its software power cap (nvidia-smi reason 0x4, SM clock ~1605 of 1980 MHz) after
verify's full-power warm-up. Here, on the choices a real verify compile keeps (captured in
its measurement), each condition reads every kept choice in 3 interleaved rounds:

- `heavy`: the shipped warm-up (100 ms of back-to-back 4096^2 GEMMs), rounds back to back;
- `gentle`: a duty-cycled warm-up (duty 0.3), rounds back to back;
- `gentle_idle1`: the same warm-up, then the GPU idles after each read for as long as it took;
- `idle300`: 300 ms idle, rounds back to back;
and the reference `alone`: each choice read once after 300 ms idle. The compiled plain
function's kernel time is ATen's truth (as `kselect bench gemm` reads it).

Usage: python conditions.py OUT_DIR [--model MODEL.json] [--deadline-s 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from diagnose import SHAPES  # noqa: E402 -- the same 14 shapes as the diagnosis

CONDITIONS = {  # name: (warm-up duty or None for idle, idle ratio after each read)
    "heavy": (1.0, 0.0),
    "gentle": (0.3, 0.0),
    "gentle_idle1": (0.3, 1.0),
    "idle300": (None, 0.0),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model", default=None)
    ap.add_argument("--deadline-s", type=float, default=300)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.deadline_s
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
         "--format=csv", "-lms", "100"],
        stdout=open(out / "smi.csv", "w"), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import torch

    from kselect.kernels.problem import Problem
    from kselect.kernels.timing import time_interleaved, time_runners, warm_gpu
    from kselect.selector.inductor import lifecycle as ksi
    from kselect.selector.compat.compile_pool import warm_compile_pool
    from kselect.selector.verify import timing as vt
    from kselect.training.bench import gemm_worker as bench
    from kselect.training.bench.common import describe_choice

    warm_gpu()
    torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device="cuda"))
    torch._dynamo.reset()
    warm_compile_pool()
    reads: list = []
    orig_judge = vt._judge_and_time

    def judged(choices, dtype, device_type, results, runners, dropped, stream, target_ms, replays, warmed=False):
        got = orig_judge(choices, dtype, device_type, results, runners, dropped, stream, target_ms, replays, warmed)
        names = [describe_choice(choices[i]) for i in runners]
        sets = [runners[i] for i in runners]
        rec = {"names": names, "verify": [got.ms[i] for i in runners], "alone": [], "conditions": {}}
        for rs in sets:
            time.sleep(0.3)
            rec["alone"].append(time_runners(rs, target_ms=target_ms, replays=replays, stream=stream).median_ms)
        for cname, (duty, idle) in CONDITIONS.items():
            if duty is None:
                torch.cuda.synchronize()
                time.sleep(0.3)
            else:
                warm_gpu(vt.WARM_MS, duty=duty)
            r = time_interleaved(sets, rounds=3, replays=3, target_ms=target_ms, stream=stream, idle_ratio=idle)
            rec["conditions"][cname] = [r.timing(k).median_ms for k in range(len(sets))]
        reads.append(rec)
        return got

    vt._judge_and_time = judged
    from torch._inductor import config as ic

    ic.max_autotune_gemm_search_space = "DEFAULT"
    selector = ksi.enable("verify", model=args.model)
    for M, N, K in SHAPES:
        if time.time() > deadline:
            break
        problem = Problem(M, N, K, "bf16", "nt", "mm")
        row = {"problem": problem.key}
        try:
            row["compiled"] = bench.measure_shape(problem, "plain", None, "cuda")["kernel_ms"]
            k0 = len(reads)
            v = bench.measure_shape(problem, "kselect-verify", selector, "cuda")
            row.update(verify_kernel_ms=v["kernel_ms"], verify_chosen=v.get("chosen"), reads=reads[k0:])
        except Exception as exc:  # noqa: BLE001 -- a failing shape is a result
            row["error"] = f"{type(exc).__name__}: {exc}"[:400]
        with open(out / "rows.jsonl", "a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        for rec in row.get("reads", []):
            a = next(k for k, n in enumerate(rec["names"]) if n.startswith("aten"))
            c = row["compiled"]
            print(
                problem.key,
                "aten/compiled:",
                f"alone {rec['alone'][a] / c:.3f}",
                " ".join(f"{n} {v[a] / c:.3f}" for n, v in rec["conditions"].items()),
                flush=True,
            )
    smi.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
