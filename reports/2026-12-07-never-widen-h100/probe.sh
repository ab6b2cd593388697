# The never-widen probe (reports/device/plan.md, "Never widen"): single GEMM ops compiled stock,
# under verify and under predict, one cold process each, with the code as it was before the fix.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/card.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/card.txt
for arm in stock verify predict; do
  d=$(mktemp -d)
  TORCHINDUCTOR_CACHE_DIR=$d/inductor TRITON_CACHE_DIR=$d/triton timeout ${T:-170} \
    python3 tests/selector/never_widen_worker.py --arm $arm --out $OUT/$arm.json > $OUT/$arm.log 2>&1
  echo "$arm rc=$?"
done
python3 - <<'PY'
import json, os
for arm in ("stock", "verify", "predict"):
    p = os.path.join(os.environ["OUT"], arm + ".json")
    if not os.path.exists(p):
        print(arm, "no result"); continue
    r = json.load(open(p))
    for op, row in r["ops"].items():
        print(arm, op, "built", [len(b) for b in row["built"]], "benchmarked", [len(b) for b in row["benchmarked"]],
              "spaces", sorted({s for _, s in row["spaces"]}), "compile_s", round(row.get("compile_s", -1), 2),
              row.get("lowering"), row.get("error", ""))
PY
