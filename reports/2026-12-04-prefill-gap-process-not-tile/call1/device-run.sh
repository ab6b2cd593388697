export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
KSELECT_GPU_REPORT=$OUT/a/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -8 | tee $OUT/a/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((570 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants kselect-verify,kselect-predict \
    --repeats 5 --max-minutes $LEFT --out $OUT/a/prefill8vp 2>&1 | grep -v "Warning\|warn(" > $OUT/a/prefill8vp.log
echo "prefill8vp rc=$? at $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant" $OUT/a/prefill8vp/README.md | head -6
cd $OUT && tar czf a.tgz a && rm -rf a
