export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import xgboost, torch; print('xgboost', xgboost.__version__, 'torch', torch.__version__)" || exit 4
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
mkdir -p $OUT/bench-exhaustive-h200
LEFT=$(python3 -c "print(round((560 - ($(date +%s) - $T0)) / 60, 2))")
echo "bench budget $LEFT min"
kselect bench gemm --shapes-file data/shapes/h200-bf16-exhaustive.csv --variants plain,kselect-verify,kselect-predict,default,exhaustive \
    --exhaustive-shapes -1 --k 4 --max-minutes $LEFT --out $OUT/bench-exhaustive-h200 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" | tee $OUT/bench-exhaustive-h200/bench.log | grep -v "^\[" | tail -40
echo "total $(( $(date +%s) - T0 )) s"
