export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/b
KSELECT_GPU_REPORT=$OUT/b/gpu_report.json timeout 120 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider > $OUT/b/gpu-tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -2 $OUT/b/gpu-tests.log
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants plain,default,kselect-verify,kselect-predict \
    --max-minutes 3.4 --out $OUT/b/decode8 2>&1 | grep -v "Warning\|warn(" > $OUT/b/decode8.log
echo "decode8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A8 "## Targets" $OUT/b/decode8/README.md
LEFT=$(python3 -c "print(round((530 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants plain,default,kselect-verify,kselect-predict \
    --max-minutes $LEFT --out $OUT/b/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/b/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A8 "## Targets" $OUT/b/prefill8/README.md
cd $OUT && tar czf b.tgz b && rm -rf b
