export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/p; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/p/gpu.txt
LEFT=$(python3 -c "print(round((588 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants default,kselect-verify \
    --repeats 4 --max-minutes $LEFT --out $OUT/p/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/p/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -B2 -A8 "^| variant | model" $OUT/p/prefill8/README.md | head -12; grep -A8 "Kernel time per step" $OUT/p/prefill8/README.md
cd $OUT && tar czf p.tgz p && rm -rf p
