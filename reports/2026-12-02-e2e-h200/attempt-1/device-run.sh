export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import xgboost, torch; print('xgboost', xgboost.__version__, 'torch', torch.__version__)" || exit 4
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
KSELECT_GPU_REPORT=$OUT/gpu_report.json timeout 110 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py -q -p no:cacheprovider 2>&1 | tee $OUT/gpu_selector.log | grep -v "Warning\|warn" | tail -25
echo "gpu tests done at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((545 - ($(date +%s) - $T0)) / 60, 2))")
echo "e2e budget $LEFT min"
kselect bench e2e --device cuda --model llama3-8b-1l --dtype bf16 --batch 8 --seq 1024 \
    --workloads train,prefill,decode --variants plain,default,kselect-verify,kselect-predict,exhaustive \
    --exhaustive-model llama3-8b-1l-v32k --exhaustive-workloads decode --steps 20 --warmup 3 \
    --k 4 --max-minutes $LEFT --out $OUT/e2e-h200 2>&1 | grep -v "Warning\|warn(" | tee $OUT/e2e.log | tail -50
echo "total $(( $(date +%s) - T0 )) s"
