export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c
timeout 100 python3 -m pytest -m gpu tests/training/test_kernel_time.py -q -p no:cacheprovider -k graph_replays 2>&1 | grep -v "Warning\|warn" | tail -60 > $OUT/c/replay_test.txt
echo "replay test at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((560 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants plain,kselect-verify \
    --repeats 4 --max-minutes $LEFT --out $OUT/c/decode8pv 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode8pv.log
echo "decode8pv rc=$? at $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant" $OUT/c/decode8pv/README.md | head -6
cd $OUT && tar czf c.tgz c && rm -rf c
