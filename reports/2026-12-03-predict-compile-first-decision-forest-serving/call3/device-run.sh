export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c; git log --oneline -1 > $OUT/c/commit.txt
KSELECT_GPU_REPORT=$OUT/c/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider > $OUT/c/gpu-tests.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -4 $OUT/c/gpu-tests.log
LEFT=$(python3 -c "print(round(min(3.1, (300 - ($(date +%s) - $T0)) / 60), 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict \
    --repeats 3 --max-minutes $LEFT --out $OUT/c/decode 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode.log
echo "decode rc=$? at $(( $(date +%s) - T0 )) s"
grep -A6 "## Targets" $OUT/c/decode/README.md
cd $OUT && tar czf c.tgz c && rm -rf c
