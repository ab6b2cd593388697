"""Where verify's extra lowering goes on the one-layer decode (reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k s3).

1. Per process, at k = 1, 2 and 4: compile, `GraphLowering.run`, `GraphLowering.codegen`
   and verify's one measurement (lm_head) with its compile wait, from results.json.
2. From the cProfile of call1's verify process (k = 4): the cumulative seconds of the kept
   choices' code generation and of the one-time Triton source hash inside it, which plain
   pays later, in its codegen.

Run from the repository root: python reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/verify_lowering.py
"""
import json
import pstats
import statistics
from pathlib import Path

RUNS = {"k=1": "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call1/a/decode1-k1",
        "k=2": "reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call3/c/decode1-k2",
        "k=4": "reports/2026-12-04-prefill-tie-rounds-8-layer-decode-exhaustive/call2/q/decode1"}
PROF = Path("reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/call1/a/decode1-prof/logs/decode-kselect-verify.prof")
WATCH = {"select_algorithm.py:1928(generate_code)": "kept choices' code generation (4 choices)",
         "triton.py:5283(inductor_meta_common)": "  of which: kernel metadata (calls the hash)",
         "_triton.py:196(triton_hash_with_backend)": "  of which: Triton source hash, once per process"}


def per_process():
    print("| k | variant | compile s | GraphLowering.run s | GraphLowering.codegen s | measurement ms | compile wait ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    summary = {}
    for k, folder in RUNS.items():
        for r in json.loads(Path(folder, "results.json").read_text())["runs"]:
            if r["variant"] not in ("plain", "kselect-verify"):
                continue
            p = r["compile_phases"]
            m = (r.get("kselect") or {}).get("measurements") or [{}]
            wall, wait = m[0].get("wall_ms"), (m[0].get("phases_ms") or {}).get("compile_wait")
            print(f"| {k} | {r['variant']} | {r['compile_s']:.2f} | {p.get('GraphLowering.run', 0):.2f} | "
                  f"{p.get('GraphLowering.codegen', 0):.2f} | {'-' if wall is None else round(wall)} | "
                  f"{'-' if wait is None else round(wait)} |")
            s = summary.setdefault((k, r["variant"]), {"run": [], "codegen": []})
            s["run"].append(p.get("GraphLowering.run", 0))
            s["codegen"].append(p.get("GraphLowering.codegen", 0))
    print("\nMedians: GraphLowering.run / GraphLowering.codegen, s")
    for (k, v), s in summary.items():
        print(f"  {k} {v:15s} run {statistics.median(s['run']):.2f}  codegen {statistics.median(s['codegen']):.2f}")


def profiled():
    for prof in (PROF, PROF.with_name("decode-plain.prof")):
        stats = pstats.Stats(str(prof)).stats
        print(f"\n{prof} (cumulative s; cProfile sees the main thread only):")
        for (path, line, fn), (_, calls, _, cum, _) in sorted(stats.items(), key=lambda kv: -kv[1][3]):
            where = f"{Path(path).name}:{line}({fn})"
            if where in WATCH:
                print(f"  {cum:6.3f} s, {calls} call(s): {WATCH[where]} [{where}]")
            if where == "_triton.py:196(triton_hash_with_backend)":
                callers = {f"{Path(c[0]).name}:{c[1]}({c[2]})" for c in stats[(path, line, fn)][4]}
                print(f"         the hash's callers: {', '.join(sorted(callers))}")


if __name__ == "__main__":
    per_process()
    profiled()
