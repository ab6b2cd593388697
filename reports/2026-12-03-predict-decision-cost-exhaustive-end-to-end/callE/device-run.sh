export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/e
# 1. GPU tests: the selector on mm/addmm/bmm/transposed, and Inductor's KTCs vs our space (the mapping memo)
KSELECT_GPU_REPORT=$OUT/e/gpu_report.json timeout 200 python3 -m pytest -m gpu tests/selector/test_gpu_selector.py tests/kernels/test_gpu_space.py -q -p no:cacheprovider > $OUT/e/gpu_tests.log 2>&1; echo "gpu tests rc $? at $(( $(date +%s) - T0 )) s"; tail -4 $OUT/e/gpu_tests.log
# 2. where predict's compile time goes: decode compiles under cProfile
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,kselect-predict,kselect-verify --profile-compile --max-minutes 2.2 --out $OUT/e/prof > $OUT/e/prof.log 2>&1
echo "profile done $(( $(date +%s) - T0 )) s"; grep -E "^\| (plain|kselect)" $OUT/e/prof/README.md | head -3 | cut -c1-120
# 3. in-compile decision per GEMM (model load no longer inside the first one)
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/e/dec > $OUT/e/dec.log 2>&1
echo "dec done $(( $(date +%s) - T0 )) s"; python3 -c "
import json, statistics as st
r=[json.loads(l) for l in open('$OUT/e/dec/results.jsonl')]; d=[x['decision_ms']/x['decisions'] for x in r if x.get('decisions')]
print('decisions', len(d), 'median', round(st.median(d),2), 'max', round(max(d),2), 'all', [round(x,1) for x in d])"
cd $OUT && tar czf e.tgz e && rm -rf e
