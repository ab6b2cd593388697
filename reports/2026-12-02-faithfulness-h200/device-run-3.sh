export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import torch._inductor.select_algorithm as s, inspect; print('extern graph flag:', '_benchmark_with_cudagraphs' in inspect.getsource(s.ExternKernelCaller.benchmark))"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --exhaustive-shapes 2 --k 4 --max-minutes 6.5 --out $OUT/bench 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" | tee $OUT/bench.log | grep -v "^\[" | tail -60
echo "bench done at $(( $(date +%s) - T0 )) s"
KSELECT_GPU_REPORT=$OUT/gpu_report.json timeout 75 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py -q -p no:cacheprovider 2>&1 | tee $OUT/gpu_selector.log | tail -15
echo "gpu tests done at $(( $(date +%s) - T0 )) s"
if timeout 40 python3 scratch/smoke_k.py 2>&1 | tee $OUT/smoke.log; then
  timeout 45 kselect faithfulness --shapes 64x18176x4544 --per-template 3 --out $OUT/faith 2>&1 | grep -v Warning | grep -v warn_once | tail -22
fi
echo "total $(( $(date +%s) - T0 )) s"
