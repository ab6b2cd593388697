export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/c
# 1. the re-timing again, now that verify warms the GPU before timing (the first-timed choice read slow in callB)
kselect retime --data data/h200-bf16 --top 6 --max-minutes 4.4 > $OUT/c/retime.log 2>&1
echo "retime rc=$? $(( $(date +%s) - T0 )) s"
kselect dataset compact data/h200-bf16/retimed > $OUT/c/compact.log 2>&1
kselect retime --data data/h200-bf16 --summary > $OUT/c/summary.json 2>&1
tail -1 $OUT/c/retime.log; grep -c "timed in" $OUT/c/retime.log
cp -r data/h200-bf16/retimed $OUT/c/retimed
# 2. the predict decision inside compiles (policy memo), shipped model
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/c/dec > $OUT/c/dec.log 2>&1
echo "dec done $(( $(date +%s) - T0 )) s"; grep -A4 "^| variant | shapes" $OUT/c/dec/README.md | head -4; grep -A3 "^| variant | featurize" $OUT/c/dec/README.md | head -3
# 3. GPU tests (verify's warm-up and per-choice stats are new)
LEFT=$(( 560 - ($(date +%s) - T0) ))
KSELECT_GPU_REPORT=$OUT/c/gpu_report.json timeout $LEFT python3 -m pytest -m gpu tests/ -q > $OUT/c/gpu-tests.log 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $OUT/c/gpu-tests.log
cd $OUT && tar czf c.tgz c && rm -rf c
