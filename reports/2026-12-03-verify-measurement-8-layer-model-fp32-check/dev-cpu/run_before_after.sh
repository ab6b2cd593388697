# 2026-12-03, dev CPU: load_timing.py alternately on the old (3219f94) and new versions of
# the three files the load change touched, 8 rounds; medians by load_timing_summary.py.
# Run from the repo root with a clean work tree: bash reports/h200-session11/dev-cpu/run_before_after.sh
set -e
FILES="selector/model/forest.py selector/model/features.py kernels/backend.py"
for i in 1 2 3 4 5 6 7 8; do
  git checkout -q 3219f94 -- $FILES
  echo "before $(.venv/bin/python reports/h200-session11/dev-cpu/load_timing.py)"
  git checkout -q HEAD -- $FILES
  echo "after $(.venv/bin/python reports/h200-session11/dev-cpu/load_timing.py)"
done
