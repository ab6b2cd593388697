export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/k
# 1. is the collector's cuBLAS time on an lm_head GEMM the time a compiled program gets?
timeout 100 kselect faithfulness --shapes 8x128256x4096 --per-template 2 --out $OUT/k/faith > $OUT/k/faith.log 2>&1
echo "faith rc $? at $(( $(date +%s) - T0 )) s"; python3 -c "import csv; [print(r) for r in csv.DictReader(open('$OUT/k/faith/faithfulness.csv'))]" 2>/dev/null | cut -c1-400
# 2. training step: plain, kselect predict and verify (early decision), one process each
kselect bench e2e --device cuda --model llama3-8b-1l --workloads train --variants plain,kselect-predict,kselect-verify \
    --max-minutes 2.6 --out $OUT/k/e2e-train > $OUT/k/e2e-train.log 2>&1
echo "train done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|default|kselect)" $OUT/k/e2e-train/README.md | head -6 | cut -c1-200
cd $OUT && tar czf k.tgz k && rm -rf k
