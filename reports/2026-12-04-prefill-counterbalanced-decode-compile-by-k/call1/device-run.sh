export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
KSELECT_GPU_REPORT=$OUT/a/gpu_report.json timeout 150 python3 -m pytest -m gpu tests/ -q -p no:cacheprovider 2>&1 | tail -8 | tee $OUT/a/gpu_tests.txt
echo "gpu tests at $(( $(date +%s) - T0 )) s"
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-verify --profile-compile --profile-steps 0 \
    --max-minutes 1.5 --out $OUT/a/decode1-prof 2>&1 | grep -v "Warning\|warn(" > $OUT/a/decode1-prof.log
echo "prof rc=$? at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((585 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-verify --k 1 \
    --repeats 4 --max-minutes $LEFT --out $OUT/a/decode1-k1 2>&1 | grep -v "Warning\|warn(" > $OUT/a/decode1-k1.log
echo "k1 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "^| variant | target" $OUT/a/decode1-k1/README.md
cd $OUT && tar czf a.tgz a && rm -rf a
