export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/f
left() { python3 -c "print(round(($1 - ($(date +%s) - $T0)) / 60, 2))"; }
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.1 --out $OUT/f/dec > $OUT/f/dec.log 2>&1
echo "dec done $(( $(date +%s) - T0 )) s"; python3 -c "
import json, statistics as st
r=[json.loads(l) for l in open('$OUT/f/dec/results.jsonl')]; d=[x['decision_ms']/x['decisions'] for x in r if x.get('decisions')]
print('decisions', len(d), 'median', round(st.median(d),2), 'max', round(max(d),2), 'all', [round(x,1) for x in d])"
kselect bench e2e --device cuda --model llama3-8b-1l-v32k --workloads decode --variants plain,kselect-verify --min-k 2 --repeats 2 \
    --max-minutes $(left 330) --out $OUT/f/e2e-v32k-mink2 > $OUT/f/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"
sed -n '/^## decode/,/^Compile phases/p' $OUT/f/e2e-v32k-mink2/README.md | cut -c1-230
python3 -c "
import json; d=json.load(open('$OUT/f/e2e-v32k-mink2/results.json'))
for r in d['runs']: print(r['variant'], r.get('compile_s'), r.get('graph_step_ms'), (r.get('kselect') or {}).get('picks'))"
cd $OUT && tar czf f.tgz f && rm -rf f
