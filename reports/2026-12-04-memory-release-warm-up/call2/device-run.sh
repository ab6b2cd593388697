export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/d


LEFT=$(python3 -c "print(round((545 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants kselect-verify-keep,kselect-predict --warmup-s 10 \
    --repeats 4 --aten-margin 0 --max-minutes $LEFT --out $OUT/d/prefill8warm 2>&1 | grep -v "Warning\|warn(" > $OUT/d/prefill8warm.log
echo "prefill8warm rc=$? at $(( $(date +%s) - T0 )) s"; grep -A5 "^| variant" $OUT/d/prefill8warm/README.md | head -7
cd $OUT && tar czf d.tgz d && rm -rf d
