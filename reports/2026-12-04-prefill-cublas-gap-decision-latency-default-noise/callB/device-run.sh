export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/b
KSELECT_GPU_REPORT=$OUT/b/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/b/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.3 \
    --out $OUT/b/predict30 2>&1 | grep -v "Warning\|warn(" > $OUT/b/predict30.log
echo "predict30 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A12 "^## Per variant\|decision phases\|Decision" $OUT/b/predict30/README.md | head -40
LEFT=$(python3 -c "print(round((575 - ($(date +%s) - $T0)) / 60, 2))")
echo "default budget $LEFT min"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants default --max-minutes $LEFT \
    --out $OUT/b/default30 2>&1 | grep -v "Warning\|warn(" | grep -v "^E1\|^  triton_\|ACC_TYPE" > $OUT/b/default30.log
echo "default30 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "^## Per variant" $OUT/b/default30/README.md
cd $OUT && tar czf b.tgz b && rm -rf b
