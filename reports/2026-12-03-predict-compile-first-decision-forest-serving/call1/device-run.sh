export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/a/gpu.txt 2>&1
timeout 150 python3 scratch/rotation.py $OUT/a/rotation.json > $OUT/a/rotation.log 2>&1; echo "rotation rc=$? at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((575 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads train --variants plain,default,kselect-verify,kselect-predict \
    --repeats 2 --max-minutes $LEFT --out $OUT/a/e2e-train 2>&1 | grep -v "Warning\|warn(" > $OUT/a/e2e-train.log
echo "e2e rc=$? at $(( $(date +%s) - T0 )) s"; tail -30 $OUT/a/e2e-train.log; cat $OUT/a/rotation.log
cd $OUT && tar czf a.tgz a && rm -rf a
