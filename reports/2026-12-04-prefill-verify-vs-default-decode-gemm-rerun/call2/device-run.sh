export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/y
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict \
    --profile-compile --max-minutes 1.3 --out $OUT/y/decode1-prof 2>&1 | grep -v "Warning\|warn(" > $OUT/y/decode1-prof.log
echo "prof rc=$? at $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant | model" $OUT/y/decode1-prof/README.md
LEFT=$(python3 -c "print(round((560 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict \
    --repeats 9 --max-minutes $LEFT --out $OUT/y/decode1 2>&1 | grep -v "Warning\|warn(" > $OUT/y/decode1.log
echo "decode1 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant | model" $OUT/y/decode1/README.md; grep -A6 "^| phase" $OUT/y/decode1/README.md; grep -A4 "## Targets" $OUT/y/decode1/README.md
cd $OUT && tar czf y.tgz y && rm -rf y
