export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-verify --k 2 \
    --repeats 3 --max-minutes 3.2 --out $OUT/c/decode1-k2 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode1-k2.log
echo "k2 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A3 "^| decode | kselect" $OUT/c/decode1-k2/README.md
LEFT=$(python3 -c "print(round((585 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict \
    --repeats 6 --max-minutes $LEFT --out $OUT/c/decode1-predict 2>&1 | grep -v "Warning\|warn(" > $OUT/c/decode1-predict.log
echo "predict rc=$? at $(( $(date +%s) - T0 )) s"; grep -A3 "^| decode | kselect" $OUT/c/decode1-predict/README.md
cd $OUT && tar czf c.tgz c && rm -rf c
