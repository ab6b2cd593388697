export PYTHONUNBUFFERED=1; set -o pipefail; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 3
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
mkdir -p $OUT/b; git log --oneline -1 > $OUT/b/commit.txt
python3 -c "
import sys, time; t = time.perf_counter()
from kselect.selector.model.discovery import load_shipped; m = load_shipped('h200-bf16.json')
print('model load s', round(time.perf_counter() - t, 3), 'xgboost imported', 'xgboost' in sys.modules)" > $OUT/b/load.txt 2>&1
kselect bench gemm --shapes-file data/shapes/h200-bf16-bench.csv --variants kselect-predict --max-minutes 1.2 --out $OUT/b/dec > $OUT/b/dec.log 2>&1
echo "dec rc=$? at $(( $(date +%s) - T0 )) s"
kselect bench e2e --device cuda --model llama3-8b-1l --workloads train --variants plain,kselect-predict,autotune-aten \
    --repeats 2 --max-minutes 3.6 --out $OUT/b/train 2>&1 | grep -v "Warning\|warn(" > $OUT/b/train.log
echo "train rc=$? at $(( $(date +%s) - T0 )) s"
LEFT=$(python3 -c "print(round((570 - ($(date +%s) - $T0)) / 60, 2))")
kselect bench e2e --device cuda --model llama3-8b-1l --workloads decode --variants plain,default,kselect-verify,kselect-predict \
    --repeats 2 --max-minutes $LEFT --out $OUT/b/decode 2>&1 | grep -v "Warning\|warn(" > $OUT/b/decode.log
echo "decode rc=$? at $(( $(date +%s) - T0 )) s"
cat $OUT/b/load.txt; grep -A8 "## Targets" $OUT/b/train/README.md $OUT/b/decode/README.md; tail -5 $OUT/b/dec.log
cd $OUT && tar czf b.tgz b && rm -rf b
