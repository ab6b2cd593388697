export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/d
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants kselect-verify,plain \
    --max-minutes 1.3 --out $OUT/d/decode8 2>&1 | grep -v "Warning\|warn(" > $OUT/d/decode8.log
echo "decode8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -B2 -A6 "^| variant | model" $OUT/d/decode8/README.md | head -8; grep -A6 "Kernel time per step" $OUT/d/decode8/README.md
cd $OUT && tar czf d.tgz d && rm -rf d
