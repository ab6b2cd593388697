export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants plain,kselect-verify,kselect-predict \
    --repeats 2 --max-minutes 4.0 --out $OUT/c/decode8 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode8.log
echo "decode8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "## Targets" $OUT/c/decode8/README.md
LEFT=$(python3 -c "print(round(min(2.0, (440 - ($(date +%s) - $T0)) / 60), 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-verify \
    --repeats 2 --max-minutes $LEFT --out $OUT/c/decode1 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode1.log
echo "decode1 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "## Targets" $OUT/c/decode1/README.md
cd $OUT && tar czf c.tgz c && rm -rf c
