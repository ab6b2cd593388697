export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/q
KSELECT_GPU_REPORT=$OUT/q/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -8 | tee $OUT/q/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.3 \
    --out $OUT/q/predict30 2>&1 | grep -v "Warning\|warn(" > $OUT/q/predict30.log
echo "predict30 rc=$? at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((580 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict,kselect-verify \
    --repeats 5 --max-minutes $LEFT --out $OUT/q/decode1 2>&1 | grep -v "Warning\|warn(" > $OUT/q/decode1.log
echo "decode1 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "^| variant | target" $OUT/q/decode1/README.md
cd $OUT && tar czf q.tgz q && rm -rf q
