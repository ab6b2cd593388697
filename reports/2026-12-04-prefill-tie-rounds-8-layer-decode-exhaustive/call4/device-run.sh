export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/r
for K in 1 2; do V=kselect-verify; [ $K = 1 ] && V=plain,kselect-verify
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants $V --k $K --profile-steps 0 \
    --max-minutes 1.2 --out $OUT/r/decode1-k$K 2>&1 | grep -v "Warning\|warn(" > $OUT/r/decode1-k$K.log
echo "k=$K rc=$? at $(( $(date +%s) - T0 )) s"; done
cd $OUT && tar czf r.tgz r && rm -rf r
