export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/m
LEFT=$(python3 -c "print(round((588 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads decode --variants exhaustive,kselect-verify \
    --max-minutes $LEFT --out $OUT/m/decode8x 2>&1 | grep -v "Warning\|warn(" | grep -v "^E1\|^  triton_\|ACC_TYPE" > $OUT/m/decode8x.log
echo "decode8x rc=$? at $(( $(date +%s) - T0 )) s"; grep -B2 -A8 "^| variant | model" $OUT/m/decode8x/README.md | head -12; grep -A8 "Kernel time per step" $OUT/m/decode8x/README.md
cd $OUT && tar czf m.tgz m && rm -rf m
