export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
KSELECT_GPU_REPORT=$OUT/gpu_report.json timeout 120 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py -q -p no:cacheprovider 2>&1 | tee $OUT/gpu_selector.log | grep -v "Warning\|warn" | tail -40
echo "gpu tests done at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((440 - ($(date +%s) - $T0)) / 60, 2))")
echo "bench budget $LEFT min"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --exhaustive-shapes 3 --k 4 --max-minutes $LEFT --out $OUT/bench-gemm-h200 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" | tee $OUT/bench.log | grep -v "^\[" | tail -30
echo "bench done at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((555 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench gemm --shapes-file data/shapes/h200-bf16-mispick.csv --variants plain,kselect-verify,default --k 4 --max-minutes $LEFT --out $OUT/bench-mispick-h200 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" | tee $OUT/mispick.log | tail -30
echo "total $(( $(date +%s) - T0 )) s"
