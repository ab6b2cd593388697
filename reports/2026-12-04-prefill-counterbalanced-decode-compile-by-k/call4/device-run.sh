export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/d
LEFT=$(python3 -c "print(round((285 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants default,kselect-verify \
    --repeats 2 --max-minutes $LEFT --out $OUT/d/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/d/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -B3 -A4 "replay minus" $OUT/d/prefill8/README.md | head -12
cd $OUT && tar czf d1.tgz d && cd - >/dev/null
TL=$(( 385 - ($(date +%s) - T0) )); [ $TL -gt 150 ] && TL=150
KSELECT_GPU_REPORT=$OUT/d/gpu_report.json timeout $TL python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -4 | tee $OUT/d/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
cd $OUT && rm -f d1.tgz && tar czf d.tgz d && rm -rf d
