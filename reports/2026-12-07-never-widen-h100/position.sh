# The position probe (reports/device/rules.md, "Never widen: the third side-by-side repeat, then
# the position probe"): is the first GEMM of a process fast because Inductor's compile-worker pool
# is not ready yet? Two stock processes of the two scaled_mm ops (the rowwise first), one as the
# worker runs by default, one with --settle-pool (the warm-up waits until the pool is ready).
# Each row records pool_ready, the precompile and benchmark seconds; ~4 min on the H100.
# OPS=scaled_mm_rowwise runs the short form (one GEMM a process, ~2 min).
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
for how in default settled; do
  flag=""; [ $how = settled ] && flag="--settle-pool"
  d=$(mktemp -d)
  TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout ${LIMIT:-250} python3 tests/selector/never_widen_worker.py \
    --arm stock --ops ${OPS:-scaled_mm_rowwise,scaled_mm_tensorwise} $flag --out $OUT/$how.json > $OUT/$how.log 2>&1
  echo "$how rc=$?"
  python3 - $OUT/$how.json <<'PY'
import json, sys
for op, row in json.load(open(sys.argv[1]))["ops"].items():
    print(f"  {op}: pool_ready={row.get('pool_ready')} precompile {row.get('precompile_s', 0):.1f} s,"
          f" benchmark {row.get('benchmark_s', 0):.1f} s, compile {row.get('compile_s', 0):.1f} s")
PY
done
