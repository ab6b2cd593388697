# Which part of kselect slows an undecided op's compile (reports/device/plan.md, "Never widen":
# isolate). Cold processes, the arms in this order: stock, verify, verify without the warm start, stock.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
OPS=scaled_mm_rowwise,grouped_mm,int_mm
run() {  # name, arm, extra flags
  d=$(mktemp -d); mkdir -p $OUT/records/$1
  TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout 150 python3 tests/selector/never_widen_worker.py \
    --arm $2 --ops $OPS --out $OUT/records/$1/result.json $3 > $OUT/$1.log 2>&1
  echo "$1 rc=$?"
}
if [ "${SECOND:-0}" = 1 ]; then  # a second paired round, predict beside
  run stock-c stock ""; run verify-c verify ""; run predict-c predict ""; run stock-d stock ""
else
  run stock-a stock ""; run verify-a verify ""; run verify-nowarm-a verify "--off warm_start"; run stock-b stock ""
fi
python3 - <<'PY'
import json, os, glob
for p in sorted(glob.glob(os.environ["OUT"] + "/records/*/result.json")):
    r = json.load(open(p)); name = p.split("/")[-2]
    print(name, {op: round(row.get("compile_s", -1), 2) for op, row in r["ops"].items()})
PY
cd $OUT && tar czf records.tgz records && rm -rf records
