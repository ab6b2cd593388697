export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c
left() { python3 -c "print(round(($1 - ($(date +%s) - $T0)) / 60, 2))"; }
kselect bench e2e --device cuda --model llama3-8b-1l-v32k --workloads decode --variants plain,default,kselect-verify,kselect-predict,exhaustive \
    --max-minutes $(left 565) --out $OUT/c/e2e-v32k > $OUT/c/e2e-v32k.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"
sed -n '/^## decode/,/^## kselect/p' $OUT/c/e2e-v32k/README.md | cut -c1-250
cd $OUT && tar czf c.tgz c && rm -rf c
