export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/z
LEFT=$(python3 -c "print(round((440 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants plain,kselect-verify,kselect-predict,default --k 4 \
    --max-minutes $LEFT --out $OUT/z/gemm30 2>&1 | grep -v "Warning\|warn(" > $OUT/z/gemm30.log
echo "gemm30 rc=$? at $(( $(date +%s) - T0 )) s"; grep -B2 -A12 "## Summary\|geomean" $OUT/z/gemm30/README.md | head -40
cd $OUT && tar czf z.tgz z && rm -rf z
