export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
# the 30-shape comparison, verify (k<=4) and predict against stock DEFAULT, after the early decision + memo
LEFT=$(python3 -c "print(round((565 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants plain,kselect-verify,kselect-predict,default --k 4 --max-minutes $LEFT --out $OUT/a/bench > $OUT/a/bench.log 2>&1
echo "bench done rc=$? $(( $(date +%s) - T0 )) s"
sed -n '/## Targets/,/## Per shape/p' $OUT/a/bench/README.md | head -50
cd $OUT && tar czf a.tgz a && rm -rf a
