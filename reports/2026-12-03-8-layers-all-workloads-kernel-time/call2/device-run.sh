export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/t
kselect bench e2e --device cuda --model llama3-8b-8l --workloads train --variants plain,default,kselect-verify,kselect-predict \
    --max-minutes 8.4 --out $OUT/t/train8 2>&1 | grep -v "Warning\|warn(" > $OUT/t/train8.log
echo "train8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A8 "## Targets" $OUT/t/train8/README.md
nvidia-smi --query-gpu=memory.used,memory.total --format=csv; cd $OUT && tar czf t.tgz t && rm -rf t
