export PYTHONUNBUFFERED=1
set -o pipefail
T0=$(date +%s)
END=470
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -c "import xgboost, torch; print('xgboost', xgboost.__version__, 'torch', torch.__version__)" || exit 4
mkdir -p $OUT/c
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --k 4 --max-minutes 1.1 --out $OUT/c/bench-gemm-decisions 2>&1 | grep -v "^$" | grep -v "Warning\|warn(" > $OUT/c/bench-gemm.log; grep -A6 "Per variant" $OUT/c/bench-gemm-decisions/README.md
python3 - <<P
import json, statistics
rows=[json.loads(l) for l in open('$OUT/c/bench-gemm-decisions/results.jsonl')]
d=[(round(r['decision_ms'],1), round(r.get('decision_cpu_ms',0),1)) for r in rows if r.get('decisions')]
print('predict decision wall/cpu ms:', d)
print('median wall', statistics.median(x for x,_ in d), 'max', max(x for x,_ in d))
P
echo "bench done at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round(($END - 100 - ($(date +%s) - $T0)) / 60, 2))")
echo "e2e budget $LEFT min"
kselect bench e2e --device cuda --model llama3-8b-1l --dtype bf16 --batch 8 --seq 1024 \
    --workloads decode,prefill --variants plain,default,kselect-verify,kselect-verify-epilogue,kselect-predict \
    --steps 20 --warmup 3 --k 4 --max-minutes $LEFT --out $OUT/e2e-h200 2>&1 | grep -v "Warning\|warn(" | tee $OUT/c/e2e.log | grep -v "starting" | tail -16
LEFT=$(python3 -c "print(round(($END - ($(date +%s) - $T0)) / 60, 2))")
echo "second decode sample budget $LEFT min"
kselect bench e2e --device cuda --model llama3-8b-1l --dtype bf16 --batch 8 --seq 1024 \
    --workloads decode --variants plain,default,kselect-verify,kselect-verify-epilogue,kselect-predict \
    --steps 20 --warmup 3 --k 4 --max-minutes $LEFT --out $OUT/e2e-h200-decode2 2>&1 | grep -v "Warning\|warn(" | tee $OUT/c/e2e-decode2.log | grep -v "starting" | tail -8
cd $OUT && for d in e2e-h200 e2e-h200-decode2; do [ -d $d/logs ] && (cd $d && tar czf logs.tgz logs && rm -rf logs); done; rm -f e2e-h200-decode2/compile_vs_step.png; tar czf c.tgz c && rm -rf c; find $OUT -type f
echo "total $(( $(date +%s) - T0 )) s"
