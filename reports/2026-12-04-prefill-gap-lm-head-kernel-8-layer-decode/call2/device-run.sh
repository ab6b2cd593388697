export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/b
LEFT=$(python3 -c "print(round((575 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants plain,default,kselect-verify,kselect-predict \
    --repeats 3 --max-minutes $LEFT --out $OUT/b/decode8 2>&1 | grep -v "Warning\|warn(" > $OUT/b/decode8.log
echo "decode8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A5 "^| variant" $OUT/b/decode8/README.md | head -14
cd $OUT && tar czf b.tgz b && rm -rf b
