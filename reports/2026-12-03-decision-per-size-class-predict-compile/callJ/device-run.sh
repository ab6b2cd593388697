export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/j
# 1. in-compile predict decision per GEMM, with its phases
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/j/dec > $OUT/j/dec.log 2>&1
python3 -c "
import json, statistics as st
r=[json.loads(l) for l in open('$OUT/j/dec/results.jsonl')]; r=[x for x in r if x.get('decisions')]
d=[x['decision_ms']/x['decisions'] for x in r]
print('decisions', len(d), 'early', sum(x.get('early_decisions',0) for x in r), 'median', round(st.median(d),2), 'all', [round(x,1) for x in d])
for x in r[:3]: print(x.get('decision_phases_ms'))
"; grep -i "phase" $OUT/j/dec/README.md | head -5
echo "dec done $(( $(date +%s) - T0 )) s"
# 2. verify with min_k 2 on the two skinny shapes of the EXHAUSTIVE comparison
kselect bench gemm --shapes-file data/shapes/h200-bf16-exhaustive-rest.csv --variants plain,kselect-verify --min-k 2 --k 4 --max-minutes 1.5 --out $OUT/j/mink2 > $OUT/j/mink2.log 2>&1
grep -E "^\| mm" $OUT/j/mink2/README.md | head -4 | cut -c1-220
echo "mink2 done $(( $(date +%s) - T0 )) s"
# 3. decode compile: plain vs predict, 6 processes each, interleaved
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict --repeats 6 --max-minutes 4.8 --out $OUT/j/e2e > $OUT/j/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/j/e2e/README.md | head -4 | cut -c1-160
# 4. predict with an ATen margin no template clears (lm_head back to cuBLAS): its compile and GPU step
LEFT=$(python3 -c "print(round((565 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict --aten-margin 100 --repeats 3 --max-minutes $LEFT --out $OUT/j/e2e-aten > $OUT/j/e2e-aten.log 2>&1
echo "e2e aten done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/j/e2e-aten/README.md | head -4 | cut -c1-160
cd $OUT && tar czf j.tgz j && rm -rf j
