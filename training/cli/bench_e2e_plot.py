"""`kselect bench e2e-plot`: pooled `bench e2e` runs as one picture -- per model and workload,
each variant's step speed-up over plain with its interval, and its compile time
(training/bench/e2e_plot.py)."""

from __future__ import annotations


def add_parser(bench_subparsers) -> None:
    p = bench_subparsers.add_parser(
        "e2e-plot", help="per model and workload: each variant's step speed-up over plain and its compile, one picture"
    )
    p.add_argument("results", nargs="+", help="`bench e2e-pool` results.json files, or the folders holding them")
    p.add_argument("--out", required=True, help="the PNG to write")
    p.add_argument("--title", default="", help="a title over both panels")
    p.set_defaults(func=run)


def run(args) -> int:
    from kselect.training.bench.e2e_plot import plot_pooled

    rows = plot_pooled(args.results, args.out, args.title)
    shown = [r for r in rows if r["speedup"] is not None]
    for r in shown:
        interval = "({:.3f}-{:.3f})".format(*r["speedup_interval"]) if r["speedup_interval"] else "(one process)"
        label = r["label"].replace("\n", ", ")
        print(f"{label:<60} {r['variant']:<22} {r['speedup']:.3f}x {interval}, compile {r['compile_s']:.1f} s")
    left = sorted({r["label"] for r in rows} - {r["label"] for r in shown})
    if left:
        print(f"left out (no plain, or no step samples): {'; '.join(x.replace(chr(10), ', ') for x in left)}")
    print(f"wrote {args.out}")
    return 0
