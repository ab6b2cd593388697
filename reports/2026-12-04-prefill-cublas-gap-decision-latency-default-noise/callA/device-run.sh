export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/a
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/a/gpu.txt 2>&1
LEFT=$(python3 -c "print(round((560 - ($(date +%s) - $T0)) / 60, 2))")
echo "budget $LEFT min"
kselect bench gemm --shapes-file scratch/gateup.csv (= reports/h200-session14/callA/gateup.csv) --variants plain,default,exhaustive --exhaustive-shapes -1 \
    --max-minutes $LEFT --out $OUT/a/gateup 2>&1 | grep -v "Warning\|warn(" > $OUT/a/gateup.log
echo "gateup rc=$? at $(( $(date +%s) - T0 )) s"; grep -A20 "## " $OUT/a/gateup/README.md | head -60
grep -i "AUTOTUNE\|ms \|SingleProcess" $OUT/a/gateup.log | head -30
cd $OUT && tar czf a.tgz a && rm -rf a
