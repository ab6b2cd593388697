export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/x
KSELECT_GPU_REPORT=$OUT/x/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/x/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((555 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants default,kselect-verify \
    --repeats 3 --max-minutes $LEFT --out $OUT/x/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/x/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -B2 -A8 "^| variant | model" $OUT/x/prefill8/README.md | head -12; grep -A8 "Kernel time per step" $OUT/x/prefill8/README.md; grep -A14 "Kernels whose time differs" $OUT/x/prefill8/README.md
cd $OUT && tar czf x.tgz x && rm -rf x
