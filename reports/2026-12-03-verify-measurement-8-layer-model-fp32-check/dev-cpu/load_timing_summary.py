"""Medians per version of run_before_after.sh's output (stdin)."""
import statistics
import sys

rows = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) >= 9 and parts[0] in ("before", "after"):
        vals = dict(zip(parts[1::2], parts[2::2]))
        rows.setdefault(parts[0], []).append({k: float(v) for k, v in vals.items() if k in ("load", "warm", "prime", "total")})
for version, rs in rows.items():
    print(version, len(rs), "runs, median ms:", {k: round(statistics.median(r[k] for r in rs), 1) for k in rs[0]},
          "total range", min(r["total"] for r in rs), "-", max(r["total"] for r in rs))
