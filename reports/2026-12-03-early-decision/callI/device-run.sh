export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/i
# 1. the decision on this host, late vs early (warm / cold size class)
timeout 90 python3 -m kselect.training.bench.rank --model models/h200-bf16.json --reps 200 --decision > $OUT/i/bench_rank.json 2>$OUT/i/bench_rank.err
python3 -c "
import json; d=json.load(open('$OUT/i/bench_rank.json'))['decision']
print({k: round(v,2) if isinstance(v,float) else v for k,v in d.items()})"
# 2. stock EXHAUSTIVE per GEMM on the two skinny shapes it never reached (reports/2026-12-02-bench-exhaustive-h200)
kselect bench gemm --shapes-file data/shapes/h200-bf16-exhaustive-rest.csv --variants plain,kselect-verify,kselect-predict,default,exhaustive \
    --exhaustive-shapes -1 --k 4 --max-minutes 4.5 --out $OUT/i/exh > $OUT/i/exh.log 2>&1
echo "exhaustive done $(( $(date +%s) - T0 )) s"; grep -E "^\| (mm|shape)" $OUT/i/exh/README.md | head -4
# 3. decode end to end: plain vs predict (early decision), one more set of processes
LEFT=$(python3 -c "print(round((470 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict --repeats 2 --max-minutes $LEFT --out $OUT/i/e2e > $OUT/i/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/i/e2e/README.md | head -4 | cut -c1-160
cd $OUT && tar czf i.tgz i && rm -rf i
