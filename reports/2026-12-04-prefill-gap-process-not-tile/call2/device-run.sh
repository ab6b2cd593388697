export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/b
LEFT=$(python3 -c "print(round((570 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants kselect-verify,kselect-predict \
    --repeats 5 --aten-margin 0 --max-minutes $LEFT --out $OUT/b/prefill8m0 2>&1 | grep -v "Warning\|warn(" > $OUT/b/prefill8m0.log
echo "prefill8m0 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant" $OUT/b/prefill8m0/README.md | head -6
cd $OUT && tar czf b.tgz b && rm -rf b
