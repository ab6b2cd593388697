"""Does the profiler-free ATen probe read the same cuBLAS facts as the profiler's?

For every problem of the shape files given (and each of them as addmm, and a few bmm), in one
process: ATen's launches read from a CUDA graph's debug dump (`reader="graph"`, the fix), then,
after all of those, from torch.profiler (`reader="profiler"`, how the training data's facts were
read), each turned into the cost model's ATEN_KERNEL_COLUMNS by `record_facts`. A problem
agrees when all 13 columns are equal. Writes rows.jsonl (both records, both facts, each read's
milliseconds), two raw DOT dumps (a split-K problem and a plain one) and summary.md.

Usage: python probe_facts.py OUT_DIR SHAPES.csv [SHAPES.csv ...] [--deadline-s 120]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def problems_from(files: list[Path]):
    import dataclasses

    from kselect.training.workloads.shapes import read_shapes_csv

    seen, out = set(), []
    for f in files:
        for p in read_shapes_csv(f):
            for q in (p, dataclasses.replace(p, op="addmm") if p.op == "mm" else None):
                if q is not None and q.key not in seen:
                    seen.add(q.key)
                    out.append(q)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("shapes", type=Path, nargs="+")
    ap.add_argument("--deadline-s", type=float, default=120)
    args = ap.parse_args()
    import torch

    from kselect.kernels.aten import launched
    from kselect.kernels.problem import Problem

    deadline = time.time() + args.deadline_s
    args.out.mkdir(parents=True, exist_ok=True)
    problems = problems_from(args.shapes) + [
        Problem(M, N, K, "bf16", "nt", op="bmm", batch=8)
        for M, N, K in ((128, 128, 64), (2048, 128, 2048), (64, 1024, 1024))
    ]
    dumps = 0
    real_dump = launched.dot_launches

    def keeping_dump(text):  # the first dumps are kept for the report and the parser's test
        nonlocal dumps
        if dumps < 2:
            (args.out / f"dump-{dumps}.dot").write_text(text)
            dumps += 1
        return real_dump(text)

    launched.dot_launches = keeping_dump
    rows = {}
    for p in problems:
        if time.time() > deadline - 30:
            break
        t0 = time.perf_counter()
        try:
            rec = launched.probe(p, reader="graph")
            rows[p.key] = {"problem": p.key, "graph": rec, "graph_facts": launched.record_facts(rec, p)}
        except Exception as exc:  # noqa: BLE001 -- a finding
            rows[p.key] = {"problem": p.key, "graph_error": f"{type(exc).__name__}: {exc}"[:300]}
        rows[p.key]["graph_ms"] = (time.perf_counter() - t0) * 1e3
    launched.dot_launches = real_dump
    for key, row in rows.items():
        p = next(q for q in problems if q.key == key)
        t0 = time.perf_counter()
        try:
            rec = launched.probe(p, reader="profiler")
            row.update(profiler=rec, profiler_facts=launched.record_facts(rec, p))
        except Exception as exc:  # noqa: BLE001
            row["profiler_error"] = f"{type(exc).__name__}: {exc}"[:300]
        row["profiler_ms"] = (time.perf_counter() - t0) * 1e3
        row["agree"] = row.get("graph_facts") is not None and row.get("graph_facts") == row.get("profiler_facts")
    torch.cuda.synchronize()
    with open(args.out / "rows.jsonl", "w") as fh:
        for row in rows.values():
            fh.write(json.dumps(row) + "\n")
    n, agree = len(rows), sum(r["agree"] for r in rows.values())
    ms = sorted(r["graph_ms"] for r in rows.values())
    pms = sorted(r["profiler_ms"] for r in rows.values())
    lines = [
        f"problems read: {n} of {len(problems)}; facts equal on {agree}",
        f"graph reader ms: median {ms[len(ms) // 2]:.1f}, max {ms[-1]:.1f}; "
        f"profiler reader ms: median {pms[len(pms) // 2]:.1f}, max {pms[-1]:.1f}",
        "",
    ]
    for r in rows.values():
        if not r["agree"]:
            g, q = r.get("graph", {}), r.get("profiler", {})
            lines.append(
                f"- {r['problem']}: graph {g.get('kernels', r.get('graph_error'))!s:.300} "
                f"vs profiler {q.get('kernels', r.get('profiler_error'))!s:.300}"
            )
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
