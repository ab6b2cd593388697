export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/h
# 1. GPU tests: selector (incl. early vs late decision, decompose-k) + space
KSELECT_GPU_REPORT=$OUT/h/gpu_report.json timeout 200 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py tests/kernels/test_gpu_space.py -q -p no:cacheprovider > $OUT/h/gpu_tests.log 2>&1; echo "gpu tests rc $? at $(( $(date +%s) - T0 )) s"; tail -2 $OUT/h/gpu_tests.log; grep -E "^(FAILED|ERROR)" $OUT/h/gpu_tests.log | head
# 2. in-compile decision per GEMM, early (default) then late
for W in early late; do
  F=""; [ $W = late ] && F="--late-decision"
  kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict $F --max-minutes 1.2 --out $OUT/h/dec-$W > $OUT/h/dec-$W.log 2>&1
  python3 -c "
import json, statistics as st
r=[json.loads(l) for l in open('$OUT/h/dec-$W/results.jsonl')]; d=[x['decision_ms']/x['decisions'] for x in r if x.get('decisions')]
print('$W', 'decisions', len(d), 'early', sum(x.get('early_decisions',0) for x in r), 'median', round(st.median(d),2), 'max', round(max(d),2), 'all', [round(x,1) for x in d])"
done
echo "dec done $(( $(date +%s) - T0 )) s"
# 3. decode end to end: plain vs predict (early decision), 3 processes each; then predict with the late decision
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict --repeats 3 --max-minutes 3.2 --out $OUT/h/e2e > $OUT/h/e2e.log 2>&1
echo "e2e done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/h/e2e/README.md | head -4 | cut -c1-160
LEFT=$(python3 -c "print(round((560 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants kselect-predict --late-decision --repeats 3 --max-minutes $LEFT --out $OUT/h/e2e-late > $OUT/h/e2e-late.log 2>&1
echo "e2e late done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/h/e2e-late/README.md | head -4 | cut -c1-160
cd $OUT && tar czf h.tgz h && rm -rf h
