"""Does running lm_head as a Triton template cost the 8-layer prefill's graph replay? (a lead for
reports/device/plan.md, after the reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k runs)

reports/2026-12-03-8-layers-all-workloads-kernel-time ran all four variants in the same rounds. Plain and predict run lm_head
(8x128256x4096) as cuBLAS; DEFAULT and verify run it as a prologue-fused Triton template.
Per process this prints the GPU-only step, the profiled kernel total where there is one,
and the replay time outside those kernels. Then the medians of the two groups, and
verify against predict round by round.

Run from the repository root: python reports/2026-12-04-prefill-counterbalanced-decode-compile-by-k/dev-cpu/lm_head_template_graph.py
"""
import json
import statistics
from pathlib import Path

RUNS = ["reports/2026-12-03-8-layers-all-workloads-kernel-time/call1/p/prefill8", "reports/2026-12-03-8-layers-all-workloads-kernel-time/call3/k/prefill8"]
CUBLAS_LM_HEAD = {"plain", "kselect-predict"}


def lm_head_kernel(r):
    if r["variant"] == "plain":
        return "aten (plain)"
    picks = {**((r.get("gemms") or {}).get("winners") or {}), **((r.get("kselect") or {}).get("picks") or {})}
    got = [v for k, v in picks.items() if "128256" in k]
    if not got:   # no record of the pick: say what the step's profiled GEMM kernels show
        names = [n for n, _, _ in (r.get("kernel_time") or {}).get("gemm_kernels", [])]
        return "triton template (profile)" if any(n.startswith("triton_tem") for n in names) else "not recorded"
    return got[0][0] if isinstance(got[0], list) else got[0]


def main():
    groups, rounds = {True: [], False: []}, []
    print("| run | round | variant | lm_head | GPU-only step ms | profiled kernels ms | replay minus kernels ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for folder in RUNS:
        runs = [r for r in json.loads(Path(folder, "results.json").read_text())["runs"] if r.get("status") == "ok"]
        by_round: dict = {}
        for i, r in enumerate(runs):
            rnd = r.get("repeat", i // 4)
            by_round.setdefault(rnd, {})[r["variant"]] = r
            total = ((r.get("kernel_time") or {}).get("ms_per_step") or {}).get("total")
            gap = None if total is None else r["graph_step_ms"] - total
            groups[r["variant"] in CUBLAS_LM_HEAD].append(r["graph_step_ms"])
            print(f"| {folder.split('/')[1]}/{folder.split('/')[2]} | {rnd} | {r['variant']} | {lm_head_kernel(r)} | "
                  f"{r['graph_step_ms']:.3f} | {'-' if total is None else f'{total:.3f}'} | "
                  f"{'-' if gap is None else f'{gap:.3f}'} |")
        rounds += [v for v in by_round.values()]
    print(f"\nGPU-only step, median: lm_head on cuBLAS (plain, predict) {statistics.median(groups[True]):.3f} ms "
          f"({len(groups[True])} processes); as a template (DEFAULT, verify) {statistics.median(groups[False]):.3f} ms "
          f"({len(groups[False])})")
    diffs = [rd["kselect-verify"]["graph_step_ms"] - rd["kselect-predict"]["graph_step_ms"]
             for rd in rounds if "kselect-verify" in rd and "kselect-predict" in rd]
    print("verify - predict, per round, ms: " + ", ".join(f"{d:+.3f}" for d in diffs))


if __name__ == "__main__":
    main()
