export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/p
kselect bench e2e --device cuda --model llama3-8b-8l --workloads prefill --variants plain,default,kselect-verify,kselect-predict \
    --repeats 2 --max-minutes 8.4 --out $OUT/p/prefill8 2>&1 | grep -v "Warning\|warn(" > $OUT/p/prefill8.log
echo "prefill8 rc=$? at $(( $(date +%s) - T0 )) s"; grep -A8 "## Targets" $OUT/p/prefill8/README.md
cd $OUT && tar czf p.tgz p && rm -rf p
