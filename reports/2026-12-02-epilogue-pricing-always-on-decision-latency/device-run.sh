export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import xgboost, torch; print('xgboost', xgboost.__version__, 'torch', torch.__version__)" || exit 4
mkdir -p $OUT/b
KSELECT_GPU_REPORT=$OUT/b/gpu_epilogue.json timeout 100 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py -k epilogue -q -p no:cacheprovider 2>&1 | tee $OUT/b/gpu_epilogue.log | grep -v "Warning\|warn" | tail -8
echo "gpu test done at $(( $(date +%s) - T0 )) s"
python3 -m kselect.training.bench.rank --model models/h200-bf16.json --reps 100 --contend > $OUT/b/bench_rank.json 2>&1; python3 -c "
import json; d=json.load(open('$OUT/b/bench_rank.json'))
for k,v in d.items(): print('bench_rank', k, round(v['total_median_ms'],2), round(v['total_p90_ms'],2), 'cpu', round(v['cpu_median_ms'],2), 'cpus', v['cpus'])"
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict,kselect-verify --k 4 --max-minutes 1.5 --out $OUT/b/bench-gemm-decisions 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" > $OUT/b/bench-gemm.log; grep -A12 "Per variant" $OUT/b/bench-gemm-decisions/README.md
python3 - <<P
import json
rows=[json.loads(l) for l in open('$OUT/b/bench-gemm-decisions/results.jsonl')]
print('decision wall/cpu ms:', [(r['variant'][8:11], round(r.get('decision_ms',0),1), round(r.get('decision_cpu_ms',0),1)) for r in rows if r.get('decisions')])
P
echo "bench done at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((565 - ($(date +%s) - $T0)) / 60, 2))")
echo "e2e budget $LEFT min"
kselect bench e2e --device cuda --model llama3-8b-1l --dtype bf16 --batch 8 --seq 1024 \
    --workloads decode,prefill,train --variants plain,default,kselect-verify,kselect-predict \
    --steps 20 --warmup 3 --k 4 --max-minutes $LEFT --out $OUT/e2e-h200 2>&1 | grep -v "Warning\|warn(" | tee $OUT/b/e2e.log | tail -40
cd $OUT && tar czf b.tgz b && rm -rf b && (cd e2e-h200 && tar czf logs.tgz logs && rm -rf logs); find $OUT -type f | head -20
echo "total $(( $(date +%s) - T0 )) s"
